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

}  // namespace trainer::runtime
