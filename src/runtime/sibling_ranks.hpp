#pragma once
// Before MPI_Init returns, MPI cannot say which rank is missing. The ranks on this
// host can still be found without it: mpirun's daemon and slurmstepd start every
// local rank as a child of the same process, and each child's environment holds its
// rank (OMPI_COMM_WORLD_RANK, SLURM_PROCID, ...). /proc then tells whether such a
// sibling is stopped, exited or running.
#include <string>  // std::string
#include <vector>  // std::vector

#include "util/env.hpp"  // Env

namespace trainer::runtime {

// One line per other rank of this job on this host that is not running normally
// ("rank 1 (pid 4242, this host): the process is stopped (SIGSTOP ...)"), plus one
// line for the ranks not found on this host. Empty when no launcher names ranks.
std::vector<std::string> describe_sibling_ranks(const Env& env);

// Whether a launcher variable (OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK) gives
// this process its rank: without one, describe_sibling_ranks finds nothing to say.
bool launcher_names_ranks(const Env& env);

// For a --nprocs parent whose `count` spawned copies have not joined: they are
// descendants of this process (under MPI's daemon) running the same executable, and
// their rank in the run is 1 + their rank in their own world. One line per copy that
// is not running normally, one for those not found (never started, or gone: a
// killed one), and one saying the rest run when every copy does.
std::vector<std::string> describe_spawned_ranks(int count);

}  // namespace trainer::runtime
