// Placeholder until the owning issue lands; replaced by the real benchmark.
#include "app/commands.hpp"
#include "util/error.hpp"

namespace trainer::app {
int bench_loader(const Args&) { throw UserError("'bench loader' is not implemented yet"); }
}  // namespace trainer::app
