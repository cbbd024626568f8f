#pragma once
// Cross-checks between what MPI says (world size) and what the launcher's
// environment says (SLURM_NTASKS, OMPI_COMM_WORLD_SIZE, SLURM_NNODES, ...).
// Pure functions over an injected environment, so every case is unit-tested.
//
// The classic failure they catch: `srun ./trainer` on a SLURM without PMI for this
// MPI starts N processes that each see MPI_COMM_WORLD of size 1 ("rank 0 of 1");
// all of them would train alone and overwrite each other's files.
#include <string>  // std::string
#include <vector>  // std::vector

#include "util/env.hpp"  // Env

namespace trainer::runtime {

// Who started the process, judged from the environment alone.
enum class Launcher { none, mpirun, srun };
Launcher detect_launcher(const Env& env);
const char* launcher_name(Launcher launcher);

// Before MPI_Init: srun started several tasks but gave them no PMI (--mpi=none, no
// PMIX_RANK / PMI_RANK / PMI_FD). Some MPIs would then start N singletons, Open MPI
// aborts inside MPI_Init with a long message; this says what to do instead.
void check_pmi_before_init(const Env& env);

// Throws UserError (with a hint) when MPI's world size contradicts the launcher's
// environment; returns Lightning-style warnings for setups that work but are
// probably not what was meant (e.g. --ntasks without --ntasks-per-node).
// `mpi_world_size` is the size of MPI_COMM_WORLD before any self-spawn.
std::vector<std::string> check_launcher(const Env& env, int mpi_world_size);

// `distributed.num_nodes` (0 = take it from the launcher) against SLURM_NNODES and
// the nodes the MPI world really spans. Throws UserError on a mismatch.
void check_num_nodes(int configured_nodes, int world_nodes, const Env& env);

// `devices` asking for `requested_per_node` GPUs against SLURM's
// --ntasks-per-node (SLURM_NTASKS_PER_NODE), as Lightning does. Throws on mismatch;
// does nothing outside SLURM or when --ntasks-per-node was not given.
void check_devices_vs_ntasks_per_node(const std::string& devices_text, int requested_per_node,
                                      const Env& env);

}  // namespace trainer::runtime
