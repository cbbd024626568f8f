#include "runtime/launch.hpp"

#include "runtime/agreed_failure.hpp"  // on_every_rank_or_none
#include "runtime/plan_report.hpp"   // gather_strings, plan_text, plan_json
#include "runtime/visible_gpus.hpp"  // visible_gpu_count

namespace trainer::runtime {

Launch::Launch(const std::vector<std::string>& subcommand_args, int nprocs, const Config& config)
    : env_(capture_environment()),
      session_(subcommand_args, nprocs, env_, config.distributed.collective_timeout) {
  // A rank-local error (e.g. too few GPUs on one node) must stop every rank, not leave
  // the others waiting in the first collective.
  plan_ = on_every_rank_or_none(session_, [&] { return plan_run(config, session_.world(), visible_gpu_count(), env_); });
  if (session_.thread_level() < MPI_THREAD_SERIALIZED) {
    plan_.warnings.push_back("the MPI library offers neither MPI_THREAD_MULTIPLE nor MPI_THREAD_SERIALIZED; "
                             "collectives from a communication thread are not safe with it");
  }
}

std::string Launch::report(bool json) const {
  const auto parts = gather_strings(world(), json ? rank_object_json(plan_.rank) : rank_row_text(plan_.rank));
  if (world().rank != 0) return {};
  return json ? plan_json(plan_, parts, false) : plan_text(plan_, parts);
}

}  // namespace trainer::runtime
