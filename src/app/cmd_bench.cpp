// `trainer bench <loader|step|allreduce|plans> [options]`.
#include <iostream>  // std::cout

#include "app/commands.hpp"  // bench_* and Args
#include "util/error.hpp"    // UserError

namespace trainer::app {

int run_bench(const Args& args) {
  const char* usage =
      "usage: trainer bench <what> [options]\n"
      "  loader     data loader frames/s per worker and in total\n"
      "  step       training images/s of one rank\n"
      "  allreduce  all-reduce time, algbw and busbw per message size (run under mpirun)\n"
      "  plans      cuDNN graph-API plans of a model's convolutions (and a ViT's fused attention) for a\n"
      "             GPU described by its device properties, built without that GPU (GPU build)\n"
      "Run `trainer bench <what> --help` for its options.\n";
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << usage;
    if (args.empty()) throw UserError("bench: say what to benchmark", "one of: loader, step, allreduce, plans");
    return 0;
  }
  const Args rest(args.begin() + 1, args.end());
  if (args[0] == "loader") return bench_loader(rest);
  if (args[0] == "step") return bench_step(rest);
  if (args[0] == "allreduce") return bench_allreduce(rest);
  if (args[0] == "plans") return bench_plans(rest);
  throw UserError("bench: unknown benchmark '" + args[0] + "'", "one of: loader, step, allreduce, plans");
}

}  // namespace trainer::app
