#include "runtime/watchdog.hpp"

#include <signal.h>  // raise, SIGSTOP

#include <algorithm>  // std::clamp, std::max
#include <cstdio>     // std::snprintf
#include <cstdlib>    // std::_Exit
#include <iostream>   // std::cerr
#include <sstream>    // std::ostringstream

#include "runtime/sibling_ranks.hpp"  // describe_sibling_ranks: naming ranks before MPI is up
#include "util/error.hpp"             // kExitFailure
#include "util/signal_cleanup.hpp"    // remove_temp_paths_now

namespace trainer::runtime {

namespace {
using Clock = std::chrono::steady_clock;

Clock::duration seconds(double s) { return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)); }
}  // namespace

namespace {
// Open MPI, PMIx, SLURM and MPICH's PMI each name the rank in their own variable.
constexpr std::pair<const char*, const char*> kLauncherRankVariables[] = {
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"PMIX_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"SLURM_PROCID", "SLURM_NTASKS"},
    {"PMI_RANK", "PMI_SIZE"}};

}  // namespace

int launcher_rank(const Env& env) {
  for (const auto& names : kLauncherRankVariables) {
    if (const auto rank = env_int(env, names.first)) return static_cast<int>(*rank);
  }
  return -1;
}

std::string launcher_rank_label(const Env& env) {
  for (const auto& [rank_key, size_key] : kLauncherRankVariables) {
    const auto rank = env_int(env, rank_key);
    if (!rank) continue;
    const auto size = env_int(env, size_key);
    return "rank " + std::to_string(*rank) + (size ? " of " + std::to_string(*size) : std::string());
  }
  return "this process";
}

Watchdog::Watchdog(double timeout_s, const Env& env)
    // Heartbeats often enough that a silent peer stands out well within the timeout,
    // and never more than a few per second.
    : timeout_s_(timeout_s),
      beat_period_s_(std::clamp(timeout_s > 0 ? timeout_s / 20.0 : 1.0, 0.1, 1.0)),
      debug_stop_(parse_debug_stop(env_get(env, "TRAINER_DEBUG_STOP").value_or(""))),
      env_(env),
      who_(launcher_rank_label(env)),
      rank_(launcher_rank(env)),
      thread_([this] { loop(); }),
      beat_thread_([this] { beat_loop(); }) {}

void Watchdog::debug_stop_point(const std::string& where) const {
  int rank = -1;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    rank = rank_;
  }
  if (debug_stop_.matches(rank, where)) raise(SIGSTOP);
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  beat_thread_.join();
}

double Watchdog::silent_after_s() const { return std::max(5.0 * beat_period_s_, 1.0); }

Watchdog::Stage Watchdog::stage(std::string what) {
  std::string previous;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    previous = std::move(stage_);
    stage_ = what;
    deadline_ = Clock::now() + seconds(timeout_s_);
  }
  debug_stop_point(what);
  return Stage(this, std::move(previous));
}

Watchdog::Stage::Stage(Stage&& other) noexcept : dog_(other.dog_), previous_(std::move(other.previous_)) {
  other.dog_ = nullptr;
}

Watchdog::Stage::~Stage() {
  if (!dog_) return;
  std::lock_guard<std::mutex> lock(dog_->mutex_);
  dog_->stage_ = std::move(previous_);
  dog_->deadline_ = Clock::now() + seconds(dog_->timeout_s_);
}

Watchdog::Backstop Watchdog::backstop(std::string what, Clock::time_point deadline) const {
  std::lock_guard<std::mutex> lock(mutex_);
  backstop_ = std::move(what);
  backstop_deadline_ = deadline;
  return Backstop(this);
}

Watchdog::Backstop::~Backstop() {
  if (!dog_) return;
  std::lock_guard<std::mutex> lock(dog_->mutex_);
  dog_->backstop_.clear();
}

std::optional<Watchdog::Stage> watch(Watchdog* dog, std::string what) {
  if (!dog) return std::nullopt;
  return dog->stage(std::move(what));
}

void Watchdog::mpi_ready(MPI_Comm comm, MPI_Comm abort_comm, bool thread_multiple) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (thread_multiple && size > 1) {
    heartbeats_.start(comm);
    heartbeats_.beat();  // at once: peers learn our host and pid even if we stop right away
  }
  std::lock_guard<std::mutex> lock(mutex_);
  who_ = "rank " + std::to_string(rank);
  rank_ = rank;
  abort_comm_ = abort_comm;
  mpi_up_ = true;
  beating_ = heartbeats_.running();
}

void Watchdog::spawning_ranks(int count) {
  std::lock_guard<std::mutex> lock(mutex_);
  spawning_ = count;
  if (count > 0) spawned_copies_ = true;
}

void Watchdog::set_abort_comm(MPI_Comm abort_comm) {
  std::lock_guard<std::mutex> lock(mutex_);
  abort_comm_ = abort_comm;
}

void Watchdog::mpi_closing() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    beating_ = false;
    mpi_up_ = false;
  }
  heartbeats_.stop();
}

std::string Watchdog::report(const std::string& what) const {
  std::string who;
  bool mpi_up = false, beating = false;
  int spawning = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    who = who_;
    mpi_up = mpi_up_;
    beating = beating_;
    spawning = spawning_;
  }
  std::ostringstream os;
  os << "error: [" << who << "] " << what << " did not complete within " << timeout_s_
     << " s (distributed.collective_timeout)\n";
  if (suspended_s_ > 0) {
    char gap[32];
    std::snprintf(gap, sizeof gap, "%.1f", suspended_s_.load());
    os << "error: [" << who << "] this rank itself did not run for " << gap
       << " s (stopped, suspended or starved of CPU)\n";
  } else if (!mpi_up && spawning > 0) {
    // A --nprocs parent: its spawned copies are not the launcher's siblings.
    for (const auto& line : describe_spawned_ranks(spawning)) os << "error: [" << who << "] " << line << "\n";
  } else if (!mpi_up) {
    const auto siblings = describe_sibling_ranks(env_);
    if (siblings.empty() && launcher_names_ranks(env_)) {
      os << "error: [" << who << "] every rank on this host is running: one elsewhere did not start, "
         << "stopped or died while starting\n";
    } else if (siblings.empty()) {
      os << "error: [" << who << "] no launcher variable names the ranks, so the one that holds the others "
         << "up cannot be named before MPI is up\n";
    }
    for (const auto& line : siblings) os << "error: [" << who << "] " << line << "\n";
  } else if (!beating) {
    os << "error: [" << who << "] no heartbeats (single rank, or MPI without MPI_THREAD_MULTIPLE): "
       << "the rank that holds the others up cannot be named\n";
  } else {
    const auto silent = heartbeats_.silent_ranks(silent_after_s());
    if (silent.empty()) {
      os << "error: [" << who << "] every rank is alive (heartbeats arrive): they wait in different "
         << "places, or the network is stuck\n";
    }
    for (int r : silent) os << "error: [" << who << "] " << heartbeats_.describe(r) << "\n";
  }
  os << "hint: a stopped, crashed or much slower rank holds the others up; raise "
        "--distributed.collective_timeout only if start-up legitimately takes longer\n";
  return os.str();
}

void Watchdog::check_peers(const std::string& what) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!beating_ || timeout_s_ <= 0) return;
  }
  if (suspended_s_.load() > 0.0) return;  // this process was stopped itself: no verdict on the others
  const auto silent = heartbeats_.silent_ranks(timeout_s_);
  if (silent.empty()) return;
  std::string who;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    who = who_;
  }
  std::ostringstream os;
  os << "error: [" << who << "] " << what << ": " << (silent.size() == 1 ? "a rank has" : "ranks have")
     << " sent no heartbeat for over " << timeout_s_ << " s (distributed.collective_timeout)\n";
  for (int r : silent) os << "error: [" << who << "] " << heartbeats_.describe(r) << "\n";
  os << "hint: a stopped, crashed or unreachable rank holds the job up; resubmit, or raise "
        "--distributed.collective_timeout if ranks are legitimately paused that long\n";
  abort_job(os.str());
}

void Watchdog::fire(const std::string& what) const { abort_job(report(what)); }

void Watchdog::fire_exited(const std::string& what, const std::vector<int>& exited) const {
  std::string who;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    who = who_;
  }
  std::ostringstream os;
  os << "error: [" << who << "] " << what << " cannot complete: ";
  for (std::size_t i = 0; i < exited.size(); ++i) os << (i ? "; " : "") << heartbeats_.describe(exited[i]);
  os << " (" << (exited.size() == 1 ? "that rank is" : "those ranks are")
     << " gone), and MPI did not return from the transfer it was in\n"
     << "hint: find out why that rank ended (its own error above, the out-of-memory killer: dmesg, the batch "
        "system's log), then continue from the last checkpoint with --resume auto\n";
  abort_job(os.str());
}

void Watchdog::kill_spawned_copies() const {
  bool parent = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    parent = spawned_copies_;
  }
  // A --nprocs parent ends the copies it started itself: MPI_Abort leaves their
  // killing to Open MPI's daemon, which did not always reach a stopped copy before
  // the parent was gone, and a stopped copy then stayed behind (issue 26).
  if (parent)
    for (long pid : heartbeats_.local_peer_pids()) kill(static_cast<pid_t>(pid), SIGKILL);
}

void Watchdog::exit_without_mpi(const std::string& text, int code) const {
  std::cerr << text << std::flush;
  kill_spawned_copies();
  remove_temp_paths_now();
  std::_Exit(code);
}

void Watchdog::abort_job(const std::string& text) const {
  std::cerr << text << std::flush;
  MPI_Comm abort_comm = MPI_COMM_NULL;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (mpi_up_) abort_comm = abort_comm_;
  }
  kill_spawned_copies();
  // Other ranks are blocked where no exception can reach them: end the whole job.
  // Before MPI is up, exiting is all there is; the launcher then ends the others.
  // MPI_Abort itself can hang in a broken transport (a peer killed mid-collective):
  // exiting anyway after a moment still ends the job, since the launcher then ends
  // the other ranks.
  if (abort_comm != MPI_COMM_NULL) {
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::seconds(2));
      std::_Exit(kExitFailure);
    }).detach();
    MPI_Abort(abort_comm, kExitFailure);
  }
  std::_Exit(kExitFailure);
}

void Watchdog::beat_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, seconds(beat_period_s_), [&] { return stopping_; });
    if (stopping_ || !beating_) continue;
    lock.unlock();
    heartbeats_.beat();  // may stay inside MPI for good when a peer died: loop() goes on
    lock.lock();
  }
}

void Watchdog::loop() {
  const auto tick = std::min(seconds(beat_period_s_), seconds(0.05));
  auto last_tick = Clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, tick, [&] { return stopping_; });
    if (stopping_) break;
    const auto now = Clock::now();
    // A tick that comes far too late means this whole process was not running
    // (SIGSTOP and SIGCONT): a report must not blame the others for that.
    const double gap = std::chrono::duration<double>(now - last_tick).count();
    if (gap > silent_after_s()) suspended_s_ = gap;
    last_tick = now;
    if (timeout_s_ > 0 && !stage_.empty() && now > deadline_) {
      const std::string what = stage_;
      lock.unlock();
      fire(what);
    }
    if (timeout_s_ > 0 && !backstop_.empty() && now > backstop_deadline_) {
      const std::string what = backstop_;
      lock.unlock();
      fire(what);
    }
    if (backstop_.empty() || !beating_) {
      peer_exited_since_ = {};
    } else if (now >= next_exit_check_) {
      next_exit_check_ = now + seconds(0.25);
      lock.unlock();
      const std::vector<int> exited = heartbeats_.exited_ranks();
      lock.lock();
      if (exited.empty()) {
        peer_exited_since_ = {};
      } else if (peer_exited_since_ == Clock::time_point{}) {
        peer_exited_since_ = now;
      } else if (now - peer_exited_since_ > seconds(kExitedPeerGrace) && !backstop_.empty()) {
        const std::string what = backstop_;
        lock.unlock();
        fire_exited(what, exited);
      }
    }
  }
}

}  // namespace trainer::runtime
