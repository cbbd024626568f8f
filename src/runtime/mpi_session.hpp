#pragma once
// RAII owner of MPI for the whole process: MPI_Init_thread in the constructor,
// MPI_Finalize in the destructor, and the run's communicator (`world().comm`),
// which everything else uses instead of MPI_COMM_WORLD.
//
// Three ways to get several ranks:
//   mpirun -np N ./trainer train ...     Open MPI starts N processes
//   srun ./trainer train ...             SLURM starts them (needs PMI: --mpi=pmix)
//   ./trainer train --nprocs N ...       this process (a singleton) spawns N-1 copies
//                                        of itself with MPI_Comm_spawn and merges
//                                        them into one communicator, itself rank 0.
// Before spawning, the launcher's environment is cross-checked against MPI's world
// (see launcher_check.hpp), so srun without PMI is an error, not N lone trainers.
#include <memory>  // std::unique_ptr
#include <string>  // std::string
#include <vector>  // std::vector

#include <mpi.h>  // MPI_Comm

#include "util/env.hpp"       // Env
#include "runtime/owned_mpi_comm.hpp"  // OwnedMpiComm
#include "runtime/watchdog.hpp"  // Watchdog
#include "runtime/world.hpp"     // World

namespace trainer::runtime {

// How this process came to be part of the run, for `trainer plan` and logs.
enum class LaunchKind { singleton, mpirun, srun, spawned_parent, spawned_child };
const char* launch_kind_name(LaunchKind kind);

class MpiSession {
 public:
  // `subcommand_args` is what the spawned copies get as argv[1..] (the subcommand
  // name followed by its arguments, `--nprocs` included: children recognise
  // themselves through MPI_Comm_get_parent and do not spawn again).
  // `nprocs` <= 1 means "no self-spawn". Throws UserError when --nprocs conflicts
  // with a launcher or the launcher's environment does not match MPI's world.
  // `timeout_s` (distributed.collective_timeout) bounds every wait for other ranks
  // from MPI_Init on (watchdog.hpp).
  MpiSession(const std::vector<std::string>& subcommand_args, int nprocs, const Env& env, double timeout_s);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  const World& world() const { return world_; }
  MPI_Comm comm() const { return world_.comm; }
  LaunchKind launch_kind() const { return kind_; }
  // MPI_THREAD_MULTIPLE when the library gives it; otherwise what it gave
  // (MPI_THREAD_SERIALIZED is enough when one thread at a time calls MPI).
  int thread_level() const { return thread_level_; }
  bool thread_multiple() const { return thread_level_ >= MPI_THREAD_MULTIPLE; }
  Watchdog& watchdog() { return *watchdog_; }

  // Declares that an error being thrown now is thrown on every rank (they agreed on
  // it, e.g. with all_ranks_ok), so MPI_Finalize is safe while unwinding. Without
  // this, a multi-rank session that unwinds skips MPI_Finalize (the other ranks
  // may be blocked in a collective); mpirun/srun then end the job.
  void failure_is_collective() { failure_collective_ = true; }

 private:
  void spawn_and_merge(const std::vector<std::string>& subcommand_args, int nprocs);
  // every_rank_here: all ranks call it together (the normal end, or an agreed failure).
  void finalize(bool every_rank_here);
  void start_heartbeats(MPI_Comm comm);

  std::unique_ptr<Watchdog> watchdog_;  // first: armed before MPI_Init, gone after MPI_Finalize
  bool heartbeats_started_ = false;
  World world_;
  LaunchKind kind_ = LaunchKind::singleton;
  int thread_level_ = MPI_THREAD_SINGLE;
  // Freed explicitly in finalize(), in this order, before MPI_Finalize.
  OwnedMpiComm owned_world_;  // dup of MPI_COMM_WORLD or the merged communicator
  OwnedMpiComm intercomm_;    // to the parent / to the spawned children
  bool owns_mpi_ = false;                 // false when MPI was already initialised by someone else
  bool failure_collective_ = false;
  int uncaught_at_start_ = 0;
};

// Every rank says whether its part went well; returns the ranks that failed (the
// same list on every rank). Lets a rank-local error stop all ranks together.
std::vector<int> all_ranks_ok(const World& world, bool ok);

}  // namespace trainer::runtime
