#pragma once
// Temporary files that SIGINT, SIGTERM and SIGHUP must not leave behind. While a
// path is registered, a handler for those signals unlinks it, then hands the signal
// to the action that was in place before (by default: the process ends). A signal
// handler can only reach process-wide state, so the registry is a fixed table of
// slots with atomic flags (async-signal-safe); it is the one piece of global
// mutable state here, and it is private to signal_cleanup.cpp.
#include <string>  // std::string

namespace trainer {

// Registers `path` (installs the handlers on first use). Returns a slot number for
// unregister_temp_path, or -1 when the table is full (the path is then only
// removed at the next start, by remove_stale_temp_files).
int register_temp_path(const std::string& path);
void unregister_temp_path(int slot);

// Unlinks every registered temporary file now, for a process that is about to end
// with std::_Exit from a thread other than the writer's (the launcher's daemon is
// gone, runtime/daemon_loss.hpp): no destructor will run to remove them.
void remove_temp_paths_now();

// Graceful stops (training). SIGUSR1 is SLURM's warning before the time limit
// (`#SBATCH --signal=USR1@90`); it may come at any time, the set-up included (a large
// import, a slow file system), and must never end the job without its requeue. So a
// GracefulStop, made when the train command starts, records it from then on, for the
// training loop to act on at its first step boundary (checkpoint, requeue).
// SIGINT and SIGTERM are recorded only while the loop runs (`in_training_loop`): in the
// set-up there is nothing to save, and after the loop nothing more to train, so there
// they end the process as before (temporary files removed). A recorded signal leaves
// temporary files alone, since the writes they belong to are about to finish. The same
// signal a second time falls back to the cleanup and the previous action (a second
// Ctrl-C ends the process at once).
class GracefulStop {
 public:
  GracefulStop();  // records SIGUSR1 from now on
  ~GracefulStop();
  GracefulStop(const GracefulStop&) = delete;
  GracefulStop& operator=(const GracefulStop&) = delete;
  // While `true`, SIGINT and SIGTERM are recorded too; `false` ends that.
  void in_training_loop(bool inside);
  // The first stop signal recorded, or 0.
  int signal_received() const;
};

}  // namespace trainer
