// Placeholder until the owning issue lands; replaced by the real benchmark.
#include "app/commands.hpp"
#include "util/error.hpp"

namespace trainer::app {
int bench_step(const Args&) { throw UserError("'bench step' is not implemented yet"); }
}  // namespace trainer::app
