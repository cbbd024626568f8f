#pragma once
// The process watchdog: a thread armed from the moment MPI is about to start, so
// that no wait outside the communicators' own deadlines can hang the job: MPI_Init,
// the world's duplicate, node discovery, the plan's agreement, the data and output
// set-up, the communicator's rendezvous, MPI_Finalize.
//
// Code that may wait for other ranks opens a Stage (RAII): the stage must end within
// `timeout_s` (distributed.collective_timeout) or the watchdog prints which stage
// stalled and which ranks have gone silent (heartbeats.hpp), then aborts the job.
// Stages nest; an inner stage's end gives the outer one a fresh deadline, so the
// limit holds for every single wait, not for their sum.
//
// The same thread sends this rank's heartbeats once MPI is up.
#include <mpi.h>  // MPI_Comm

#include <atomic>              // std::atomic
#include <chrono>              // std::chrono::steady_clock
#include <condition_variable>  // std::condition_variable
#include <mutex>               // std::mutex
#include <optional>            // std::optional
#include <string>
#include <vector>              // std::string
#include <thread>              // std::thread

#include "runtime/debug_stop.hpp"  // DebugStop
#include "util/env.hpp"         // Env
#include "runtime/heartbeats.hpp"  // Heartbeats

namespace trainer::runtime {

class Watchdog {
 public:
  // `env` names this process in reports before MPI gives it a rank (the launcher's
  // variables) and holds TRAINER_DEBUG_STOP (debug_stop.hpp); `timeout_s` <= 0
  // disables the deadlines (heartbeats still run).
  Watchdog(double timeout_s, const Env& env);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  class Stage {
   public:
    Stage(Stage&& other) noexcept;
    Stage(const Stage&) = delete;
    Stage& operator=(const Stage&) = delete;
    Stage& operator=(Stage&&) = delete;
    ~Stage();

   private:
    friend class Watchdog;
    Stage(Watchdog* dog, std::string previous) : dog_(dog), previous_(std::move(previous)) {}
    Watchdog* dog_;
    std::string previous_;
  };
  // Arms the deadline for `what` until the returned Stage ends.
  [[nodiscard]] Stage stage(std::string what);

  static constexpr double kExitedPeerGrace = 3.0;  // seconds; see backstop()
  // A backstop for a wait that enforces its own deadline but may be stuck inside MPI
  // where it cannot look at the clock: with Open MPI's TCP transport, a peer killed
  // mid-collective can leave MPI_Test spinning in the progress engine on the reset
  // connection. Unless the returned guard ends first, the watchdog reports `what` at
  // `deadline` and ends the job; sooner, kExitedPeerGrace after it sees a rank on this
  // host exited (/proc), since then the collective cannot end and a wait that checks
  // for that itself has had its chance to say so first. One at a time (the communicator thread's collective);
  // const because the watchdog is a monitor every layer may hold read-only.
  class Backstop {
   public:
    Backstop(Backstop&& other) noexcept : dog_(other.dog_) { other.dog_ = nullptr; }
    Backstop(const Backstop&) = delete;
    Backstop& operator=(const Backstop&) = delete;
    Backstop& operator=(Backstop&&) = delete;
    ~Backstop();

   private:
    friend class Watchdog;
    explicit Backstop(const Watchdog* dog) : dog_(dog) {}
    const Watchdog* dog_;
  };
  [[nodiscard]] Backstop backstop(std::string what, std::chrono::steady_clock::time_point deadline) const;

  // MPI is up: heartbeats go over `comm` (point-to-point only), reports name ranks of
  // `comm`, and a stall aborts through `abort_comm`. Needs MPI_THREAD_MULTIPLE;
  // without it there are no heartbeats and reports cannot name silent ranks.
  void mpi_ready(MPI_Comm comm, MPI_Comm abort_comm, bool thread_multiple);
  // The run's communicator replaces the one given to mpi_ready for aborting.
  void set_abort_comm(MPI_Comm abort_comm);
  // Before MPI_Finalize: no more MPI calls from the watchdog thread.
  void mpi_closing();
  // A --nprocs parent is about to spawn `count` copies of itself: until they join,
  // reports name them from /proc (sibling_ranks.hpp), not the launcher's siblings.
  void spawning_ranks(int count);

  const Heartbeats& heartbeats() const { return heartbeats_; }
  double timeout_s() const { return timeout_s_; }
  // How long a peer may be silent before reports call it stopped.
  double silent_after_s() const;

  // For long rank-local work between collectives (video prediction): when a peer has
  // sent no heartbeat for longer than timeout_s (stopped, or gone), the job ends
  // now, as a stalled stage would, naming it, instead of after this rank's share and
  // another timeout in the next collective. No-op without deadlines or heartbeats,
  // and right after this process itself was not running (the peers' beats it missed
  // are still on their way).
  void check_peers(const std::string& what);

  // TRAINER_DEBUG_STOP: stops this process (SIGSTOP) when it reaches `where`.
  void debug_stop_point(const std::string& where) const;

  // The report for a stage that missed its deadline (also used by tests).
  std::string report(const std::string& what) const;

  // Prints `text` and ends the whole job: a --nprocs parent kills the copies it
  // started, then MPI_Abort once MPI is up (with an exit of its own should MPI_Abort
  // hang), else exit. What every layer calls to abort on a stall.
  [[noreturn]] void abort_job(const std::string& text) const;

  // Prints `text` and ends this process with `code` without MPI, whose daemon is gone
  // (MPI_Abort would have nowhere to go): a --nprocs parent kills the copies it
  // started, registered temporary files are removed, then std::_Exit.
  [[noreturn]] void exit_without_mpi(const std::string& text, int code) const;

 private:
  void loop();
  void beat_loop();  // beat_thread_
  [[noreturn]] void fire(const std::string& what) const;
  // The backstop's early end: ranks on this host exited while `what` was in MPI.
  [[noreturn]] void fire_exited(const std::string& what, const std::vector<int>& exited) const;
  void kill_spawned_copies() const;

  const double timeout_s_;
  const double beat_period_s_;
  const DebugStop debug_stop_;
  std::atomic<double> suspended_s_{0.0};
  const Env env_;  // the launcher's variables, to find this host's other ranks before MPI is up  // longest time this process was seen not running
  Heartbeats heartbeats_;

  mutable std::mutex mutex_;  // guards the fields below
  std::condition_variable wake_;
  std::string who_;
  int rank_ = -1;      // from the launcher until MPI says; -1 when unknown
  std::string stage_;  // empty: disarmed
  std::chrono::steady_clock::time_point deadline_;
  mutable std::string backstop_;  // empty: disarmed (Backstop)
  mutable std::chrono::steady_clock::time_point backstop_deadline_;
  // While a backstop is armed: when a peer on this host was first seen exited (zero:
  // none seen), and when to look again (a /proc read per local peer).
  std::chrono::steady_clock::time_point peer_exited_since_{}, next_exit_check_{};
  MPI_Comm abort_comm_ = MPI_COMM_NULL;
  bool mpi_up_ = false;
  bool beating_ = false;
  int spawning_ = 0;  // copies of this process being spawned (--nprocs), until MPI is up
  bool spawned_copies_ = false;  // this process started the others (--nprocs): it ends them too
  bool stopping_ = false;
  std::thread thread_;       // the deadlines and /proc checks; never calls MPI but MPI_Abort
  std::thread beat_thread_;  // heartbeats, apart: a send can stay inside MPI (a dead peer)
};

// A stage of `dog`, or nothing when there is no watchdog (hypothetical worlds, tests).
std::optional<Watchdog::Stage> watch(Watchdog* dog, std::string what);

// "rank 1 of 4" from the launcher's environment (Open MPI, PMIx, SLURM, PMI), or
// "this process" when no launcher says; for reports before MPI_Init returns.
// This process's rank as its launcher (mpirun, srun, a PMI launcher) numbers it, read
// from the environment before or without MPI; -1 when no launcher names it.
int launcher_rank(const Env& env);
std::string launcher_rank_label(const Env& env);

}  // namespace trainer::runtime
