// Placeholder until the owning issue lands; replaced by the real subcommand.
#include "app/commands.hpp"
#include "util/error.hpp"

namespace trainer::app {
int run_import(const Args&) { throw UserError("'import' is not implemented yet"); }
}  // namespace trainer::app
