#include "runtime/mpi_session.hpp"

#include <unistd.h>  // readlink

#include <algorithm>  // std::max
#include <climits>    // PATH_MAX
#include <cstdlib>    // setenv
#include <chrono>     // std::chrono::milliseconds
#include <exception>  // std::uncaught_exceptions
#include <iostream>   // std::cerr
#include <thread>     // std::this_thread::sleep_for

#include "runtime/daemon_loss.hpp"     // watch_launcher_daemon: an error, not Open MPI's silent exit 195
#include "runtime/launcher_check.hpp"  // check_launcher, detect_launcher
#include "util/error.hpp"              // UserError, MPI_CHECK

namespace trainer::runtime {

const char* launch_kind_name(LaunchKind kind) {
  switch (kind) {
    case LaunchKind::singleton: return "singleton";
    case LaunchKind::mpirun: return "mpirun";
    case LaunchKind::srun: return "srun";
    case LaunchKind::spawned_parent: return "self-spawn";
    case LaunchKind::spawned_child: return "self-spawn";
  }
  return "unknown";
}

namespace {

std::string this_executable() {
  char path[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) throw SystemError("cannot resolve /proc/self/exe to spawn ranks");
  return std::string(path, static_cast<std::size_t>(n));
}

}  // namespace

MpiSession::MpiSession(const std::vector<std::string>& subcommand_args, int nprocs, const Env& env,
                       double timeout_s)
    : watchdog_(std::make_unique<Watchdog>(timeout_s, env)),
      uncaught_at_start_(std::uncaught_exceptions()) {
  if (nprocs < 1)
    throw UserError("--nprocs " + std::to_string(nprocs) + " is not a number of ranks",
                    "--nprocs N starts N >= 1 ranks on this machine (1: no spawn)");
  check_pmi_before_init(env);
  const Launcher launcher = detect_launcher(env);
  const bool may_spawn = nprocs > 1 && launcher == Launcher::none;
  if (may_spawn && !env_get(env, "OMPI_MCA_rmaps_base_oversubscribe")) {
    // The singleton's runtime counts this machine's cores as slots; CPU runs may want
    // more ranks than cores. Must be set before MPI_Init, which starts that runtime.
    setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 0);
  }

  int initialized = 0;
  MPI_CHECK(MPI_Initialized(&initialized));
  if (initialized) {
    MPI_CHECK(MPI_Query_thread(&thread_level_));
  } else {
    const auto stage = watchdog_->stage("start-up: MPI_Init");
    MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &thread_level_));
    owns_mpi_ = true;
  }
  // Errors come back as codes (turned into exceptions by MPI_CHECK) instead of aborting.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  // The launcher's daemon dying is an `error:` line and exit code 3 (daemon_loss.hpp).
  watch_launcher_daemon(*watchdog_, "this process");

  try {
    MPI_Comm parent = MPI_COMM_NULL;
    MPI_CHECK(MPI_Comm_get_parent(&parent));
    if (parent != MPI_COMM_NULL) {
      // A copy spawned by a `--nprocs` parent: join it, after the parent's ranks.
      kind_ = LaunchKind::spawned_child;
      intercomm_ = OwnedMpiComm::adopt(parent);
      const auto stage = watchdog_->stage("start-up: joining the --nprocs parent (MPI_Intercomm_merge)");
      MPI_Comm merged = MPI_COMM_NULL;
      MPI_CHECK(MPI_Intercomm_merge(intercomm_.get(), 1, &merged));
      owned_world_ = OwnedMpiComm::adopt(merged);
    } else {
      int world_size = 1;
      MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
      check_launcher(env, world_size);  // warnings are reported again by plan_run
      if (nprocs > 1 && launcher != Launcher::none && nprocs != world_size) {
        throw UserError("--nprocs " + std::to_string(nprocs) + " but " + launcher_name(launcher) + " started " +
                            std::to_string(world_size) + " rank(s)",
                        "--nprocs is for starting without a launcher; with mpirun or srun drop it and set "
                        "the rank count there (mpirun -np N, srun --ntasks-per-node=N)");
      }
      if (nprocs > 1 && launcher == Launcher::none && world_size == 1) {
        watchdog_->spawning_ranks(nprocs - 1);  // a stall names the copies, not the launcher's siblings
        const auto stage = watchdog_->stage("start-up: starting " + std::to_string(nprocs - 1) +
                                            " more rank(s) (MPI_Comm_spawn)");
        spawn_and_merge(subcommand_args, nprocs);
        kind_ = LaunchKind::spawned_parent;
      } else {
        // Heartbeats need no communicator of their own, so they cover the duplicate too.
        start_heartbeats(MPI_COMM_WORLD);
        const auto stage = watchdog_->stage("start-up: MPI_Comm_dup of the world");
        owned_world_ = OwnedMpiComm::duplicate(MPI_COMM_WORLD);
        kind_ = launcher == Launcher::mpirun ? LaunchKind::mpirun
                : launcher == Launcher::srun ? LaunchKind::srun
                                             : LaunchKind::singleton;
      }
    }
    MPI_Comm_set_errhandler(owned_world_.get(), MPI_ERRORS_RETURN);
    start_heartbeats(owned_world_.get());
    watchdog_->set_abort_comm(owned_world_.get());
    {
      const auto stage = watchdog_->stage("start-up: node discovery (MPI_Comm_split_type)");
      world_ = describe_world(owned_world_.get());
    }
    world_.watchdog = watchdog_.get();
    world_.launched_by = launch_kind_name(kind_);
    name_for_launcher_daemon_loss("rank " + std::to_string(world_.rank));
  } catch (...) {
    // The destructor will not run: give MPI back before the error reaches main (the
    // other ranks need not be here: no barrier).
    finalize(false);
    throw;
  }
}

void MpiSession::spawn_and_merge(const std::vector<std::string>& subcommand_args, int nprocs) {
  const std::string command = this_executable();
  std::vector<char*> argv;
  for (const auto& arg : subcommand_args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<int> errcodes(static_cast<std::size_t>(nprocs - 1), MPI_SUCCESS);
  MPI_Comm children = MPI_COMM_NULL;
  const int rc = MPI_Comm_spawn(command.c_str(), argv.data(), nprocs - 1, MPI_INFO_NULL, 0, MPI_COMM_SELF,
                                &children, errcodes.data());
  intercomm_ = OwnedMpiComm::adopt(children);
  if (rc != MPI_SUCCESS) {
    char message[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(rc, message, &length);
    throw UserError("--nprocs " + std::to_string(nprocs) + ": MPI_Comm_spawn could not start " +
                        std::to_string(nprocs - 1) + " more rank(s): " + std::string(message, length),
                    "start the ranks with `mpirun -np " + std::to_string(nprocs) +
                        " ./trainer ...` instead (as root, Open MPI also needs OMPI_ALLOW_RUN_AS_ROOT=1 "
                        "and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)");
  }
  // The parent is the low group: it becomes rank 0 of the merged communicator.
  MPI_Comm merged = MPI_COMM_NULL;
  MPI_CHECK(MPI_Intercomm_merge(intercomm_.get(), 0, &merged));
  owned_world_ = OwnedMpiComm::adopt(merged);
}

void MpiSession::start_heartbeats(MPI_Comm comm) {
  if (heartbeats_started_) return;
  heartbeats_started_ = true;
  watchdog_->mpi_ready(comm, comm, thread_multiple());
}

namespace {
// A barrier that waits without spinning a core: Open MPI's blocking MPI_Barrier
// busy-polls, and a rank waiting at shutdown would slow a peer on the same node that
// still works alone (rank 0 writes the predictions). False when `give_up` says so
// first, or when MPI reports an error.
template <typename GiveUp>
bool barrier_without_spinning(MPI_Comm comm, GiveUp give_up) {
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Ibarrier(comm, &request) != MPI_SUCCESS) return false;
  for (;;) {
    int done = 0;
    if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
    if (done) return true;
    if (give_up()) return false;  // the request is left behind: the process is leaving
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}
}  // namespace

void MpiSession::finalize(bool every_rank_here) {
  const bool together = every_rank_here && owned_world_.get() != MPI_COMM_NULL && world_.size > 1;
  // 1. Every rank reaches the end before any stops its heartbeats. No deadline here:
  //    a peer may legitimately work alone for long (rank 0's predictions); one whose
  //    heartbeats stop for distributed.collective_timeout is gone, and this rank then
  //    leaves with the error (no heartbeats or no timeout: the launcher ends the job).
  if (together) {
    const double timeout_s = watchdog_->timeout_s();
    std::vector<int> silent;
    const bool arrived = barrier_without_spinning(owned_world_.get(), [&] {
      if (timeout_s <= 0) return false;
      silent = watchdog_->heartbeats().silent_ranks(std::max(timeout_s, watchdog_->silent_after_s()));
      return !silent.empty();
    });
    if (!arrived) {
      for (int r : silent)
        std::cerr << "error: [rank " << world_.rank << "] at shutdown: " << watchdog_->heartbeats().describe(r)
                  << "\n";
      std::cerr << "error: [rank " << world_.rank << "] leaves without MPI_Finalize (a peer is gone)\n";
      watchdog_->mpi_closing();
      owned_world_.abandon();
      intercomm_.abandon();
      return;
    }
  }
  // 2. MPI_Finalize waits for every rank, so it gets a deadline. The watchdog thread
  //    stops calling MPI first (its heartbeats end), then a second barrier: past it
  //    nobody sends heartbeats, and nobody left before it. Without the two, a rank
  //    that finished early could exit while a peer still sent it heartbeats (a
  //    --nprocs child's MPI_Finalize does not wait for its parent), and Open MPI's TCP
  //    transport then spins inside MPI_Test forever ("writev failed: Broken pipe",
  //    100% CPU): the run's output was complete but the process never ended.
  const auto stage = watchdog_->stage("shutdown: MPI_Finalize");
  stop_watching_launcher_daemon();  // the daemon's connection closes on purpose from here
  watchdog_->mpi_closing();
  if (together) barrier_without_spinning(owned_world_.get(), [] { return false; });
  owned_world_.reset();
  intercomm_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_mpi_ && !finalized) MPI_Finalize();
  owns_mpi_ = false;
}

MpiSession::~MpiSession() {
  stop_watching_launcher_daemon();  // the handler must not outlive the watchdog it uses
  const bool unwinding = std::uncaught_exceptions() > uncaught_at_start_;
  if (unwinding && world_.size > 1 && !failure_collective_) {
    // Other ranks may be waiting in a collective this rank will never join; MPI_Finalize
    // would wait for them forever. Leave without it: main prints the error, and the
    // launcher ends the job when this process exits. Nor are the communicators
    // freed (the watchdog may still abort through the world).
    owned_world_.abandon();
    intercomm_.abandon();
    return;
  }
  finalize(true);
}

std::vector<int> all_ranks_ok(const World& world, bool ok) {
  std::vector<int> flags(static_cast<std::size_t>(std::max(world.size, 1)), 0);
  int mine = ok ? 0 : 1;
  if (world.comm == MPI_COMM_NULL) {
    flags[0] = mine;
  } else {
    const auto stage = watch(world.watchdog, "start-up: agreeing that every rank is ready");
    MPI_CHECK(MPI_Allgather(&mine, 1, MPI_INT, flags.data(), 1, MPI_INT, world.comm));
  }
  std::vector<int> failed;
  for (int r = 0; r < static_cast<int>(flags.size()); ++r) {
    if (flags[static_cast<std::size_t>(r)] != 0) failed.push_back(r);
  }
  return failed;
}

}  // namespace trainer::runtime
