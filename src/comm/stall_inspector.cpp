#include "comm/stall_inspector.hpp"

#include <algorithm>  // std::min
#include <chrono>    // std::chrono::steady_clock
#include <cstdlib>   // std::abort
#include <iostream>  // std::cerr
#include <sstream>   // std::ostringstream
#include <thread>    // std::this_thread::sleep_for

#include "util/error.hpp"  // MPI_CHECK

namespace trainer::comm {

namespace {
constexpr int kArrivalTag = 7301;
}

StallInspector::StallInspector(MPI_Comm world, std::string backend, const runtime::Watchdog* watchdog)
    : world_(world), watchdog_(watchdog), channel_(runtime::OwnedMpiComm::duplicate(world)), backend_(std::move(backend)) {
  rank_ = channel_.rank();
  size_ = channel_.size();
  latest_.assign(size_, 0);
  // Host names, exchanged once, so a report can say where a missing rank runs.
  char name[MPI_MAX_PROCESSOR_NAME] = {0};
  int len = 0;
  MPI_CHECK(MPI_Get_processor_name(name, &len));
  std::vector<char> all(static_cast<std::size_t>(size_) * MPI_MAX_PROCESSOR_NAME, 0);
  MPI_CHECK(MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
                          MPI_CHAR, channel_.get()));
  for (int r = 0; r < size_; ++r) hosts_.emplace_back(&all[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
  recv_value_.assign(size_, 0);
  recv_req_.assign(size_, MPI_REQUEST_NULL);
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    MPI_CHECK(MPI_Recv_init(&recv_value_[peer], 1, MPI_LONG, peer, kArrivalTag, channel_.get(),
                            &recv_req_[peer]));
    MPI_CHECK(MPI_Start(&recv_req_[peer]));
  }
}

StallInspector::~StallInspector() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  // Peers may still have arrival messages in flight to us: cancel our receives;
  // our own sends are eager (8 bytes) and complete locally.
  for (auto& req : recv_req_) {
    if (req == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Request_free(&req);
  }
  reap_sends(true);
}

void StallInspector::reap_sends(bool block) {
  for (auto it = sends_.begin(); it != sends_.end();) {
    int done = 0;
    if (block) {
      MPI_Waitall(static_cast<int>(it->requests.size()), it->requests.data(), MPI_STATUSES_IGNORE);
      done = 1;
    } else {
      MPI_CHECK(MPI_Testall(static_cast<int>(it->requests.size()), it->requests.data(), &done,
                            MPI_STATUSES_IGNORE));
    }
    it = done ? sends_.erase(it) : std::next(it);
  }
}

void StallInspector::drain() {
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    // Messages from one peer arrive in order; keep taking them until none is left.
    for (;;) {
      int flag = 0;
      MPI_CHECK(MPI_Test(&recv_req_[peer], &flag, MPI_STATUS_IGNORE));
      if (!flag) break;
      if (recv_value_[peer] > latest_[peer]) latest_[peer] = recv_value_[peer];
      MPI_CHECK(MPI_Start(&recv_req_[peer]));
    }
  }
}

void StallInspector::arrive(long seq) {
  latest_[rank_] = seq;
  if (size_ == 1) return;
  reap_sends(false);
  sends_.emplace_back();
  PendingSend& send = sends_.back();
  send.value = seq;
  send.requests.assign(size_ - 1, MPI_REQUEST_NULL);
  int i = 0;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    MPI_CHECK(MPI_Isend(&send.value, 1, MPI_LONG, peer, kArrivalTag, channel_.get(),
                        &send.requests[i++]));
  }
  drain();
}

std::vector<int> StallInspector::missing(long seq) {
  drain();
  std::vector<int> late;
  for (int peer = 0; peer < size_; ++peer) {
    if (latest_[peer] < seq) late.push_back(peer);
  }
  return late;
}

std::string StallInspector::report(long seq, const std::string& what, long step, double timeout_s) {
  const std::vector<int> late = missing(seq);
  std::ostringstream os;
  os << "error: [rank " << rank_ << "] collective '" << what << "' (#" << seq << " on the "
     << backend_ << " communicator) at step " << step << " did not complete within "
     << timeout_s << " s (distributed.collective_timeout)\n";
  const std::vector<std::string> silent = silent_rank_lines();
  if (late.empty() && !silent.empty()) {
    os << "error: [rank " << rank_ << "] every rank arrived at it, but some stopped running inside it:\n";
  } else if (late.empty()) {
    os << "error: [rank " << rank_
       << "] every rank arrived at it and every rank is alive (heartbeats arrive): the collective itself is "
          "stuck (network, or ranks calling collectives in a different order)\n";
  } else {
    os << "error: [rank " << rank_ << "] ranks that did not arrive:";
    for (int r : late) os << " " << r;
    os << "\n";
    for (int r : late) {
      os << "error: [rank " << rank_ << "]   rank " << r << " (host " << hosts_[r]
         << "): last arrived at collective #" << latest_[r] << "\n";
    }
  }
  for (const auto& line : silent) os << "error: [rank " << rank_ << "]   " << line << "\n";
  os << "hint: a rank that never arrives is stuck elsewhere (data loading, a crash, a different "
        "code path); raise --distributed.collective_timeout only if a step legitimately takes "
        "longer\n";
  return os.str();
}

std::vector<std::string> StallInspector::silent_rank_lines() const {
  std::vector<std::string> lines;
  if (!watchdog_) return lines;
  const runtime::Heartbeats& beats = watchdog_->heartbeats();
  for (int r : beats.silent_ranks(watchdog_->silent_after_s())) lines.push_back(beats.describe(r));
  return lines;
}

std::string StallInspector::failure_report(long seq, const std::string& what, long step,
                                           const std::string& cause) {
  std::vector<int> gone;
  if (watchdog_ && watchdog_->heartbeats().running()) {
    // A peer that died is seen at once when it ran on this host (/proc); elsewhere
    // its heartbeats stop, which takes a few heartbeat periods to be sure of.
    const runtime::Heartbeats& beats = watchdog_->heartbeats();
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    for (;;) {
      gone = beats.gone_ranks(std::min(watchdog_->silent_after_s(), 1.5));
      if (!gone.empty() || std::chrono::steady_clock::now() >= until) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  std::ostringstream os;
  os << "[rank " << rank_ << "] collective '" << what << "' (#" << seq << " on the " << backend_
     << " communicator) at step " << step << " failed";
  for (std::size_t i = 0; i < gone.size(); ++i) {
    os << (i == 0 ? ": " : "; ") << watchdog_->heartbeats().describe(gone[i]);
  }
  if (!gone.empty()) os << " (" << (gone.size() == 1 ? "that rank is" : "those ranks are") << " gone)";
  os << "; " << cause;
  return os.str();
}

void StallInspector::report_and_abort(long seq, const std::string& what, long step, double timeout_s,
                                      double grace_s) {
  // Arrival messages may still be in flight: give them a moment before judging.
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  while (std::chrono::steady_clock::now() < until) {
    if (missing(seq).empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  abort_job(report(seq, what, step, timeout_s));
}

void StallInspector::report_exited_and_abort(long seq, const std::string& what, long step) {
  abort_job("error: " +
            failure_report(seq, what, step, "a member's process exited while the collective waited for it") +
            "\nhint: find out why that rank ended (its own error above, the out-of-memory killer: dmesg, the batch "
            "system's log), then continue from the last checkpoint with --resume auto\n");
}

void StallInspector::abort_job(const std::string& report) const {
  if (watchdog_) watchdog_->abort_job(report);  // ends --nprocs copies too
  std::cerr << report << std::flush;
  MPI_Abort(world_, 1);
  // MPI_Abort does not return; if an MPI implementation ever did, fail loudly.
  std::abort();
}

}  // namespace trainer::comm
