#pragma once
// Everything a subcommand needs to start a run, in one object: the environment, MPI
// (MpiSession: mpirun, srun or --nprocs self-spawn), and this rank's plan, computed on
// every rank and agreed on (an error on one rank stops all of them).
//
//   runtime::Launch launch({"train", args...}, nprocs, config);
//   const auto& plan = launch.plan();        // device, per-rank batch sizes, workers, lr
//   std::string table = launch.report(false); // collective; the table on rank 0
//   ... launch.world().comm is the run's communicator ...
#include <string>  // std::string
#include <vector>  // std::vector

#include "config/config.hpp"          // trainer::Config
#include "util/env.hpp"         // Env
#include "runtime/mpi_session.hpp" // MpiSession
#include "runtime/run_plan.hpp"    // RunPlan
#include "runtime/world.hpp"       // World

namespace trainer::runtime {

class Launch {
 public:
  // `subcommand_args`: the subcommand name and its arguments, given to spawned copies.
  // `nprocs` > 1: self-spawn when no launcher started us. Throws UserError on every
  // rank when any rank's plan fails.
  Launch(const std::vector<std::string>& subcommand_args, int nprocs, const Config& config);

  const Env& env() const { return env_; }
  MpiSession& session() { return session_; }
  const World& world() const { return session_.world(); }
  const RunPlan& plan() const { return plan_; }

  // Collective: the plan of every rank as a table (or JSON), returned on rank 0
  // (empty on the other ranks).
  std::string report(bool json) const;

 private:
  Env env_;
  MpiSession session_;
  RunPlan plan_;
};

}  // namespace trainer::runtime
