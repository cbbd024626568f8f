#include "runtime/heartbeats.hpp"

#include <unistd.h>  // getpid, gethostname

#include <algorithm>  // std::find, std::sort
#include <cstdio>   // std::snprintf
#include <cstring>  // std::strncpy
#include <fstream>  // std::ifstream for /proc/<pid>/stat
#include <sstream>  // std::ostringstream

#include "util/error.hpp"  // MPI_CHECK

namespace trainer::runtime {

namespace {
// Reserved for heartbeats; no other point-to-point message in trainer uses it.
constexpr int kHeartbeatTag = 7302;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

std::string local_process_state(long pid) {
  if (pid <= 0) return {};
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return "exited (no such process on this host)";
  std::string line;
  std::getline(stat, line);
  // pid (comm) S ...: the state follows the last ')' since comm may hold spaces.
  const auto paren = line.rfind(')');
  if (paren == std::string::npos || paren + 2 >= line.size()) return {};
  switch (line[paren + 2]) {
    case 'T': return "stopped (SIGSTOP, or suspended by a job control signal)";
    case 't': return "stopped by a debugger";
    case 'Z': return "exited (a zombie not yet reaped by its launcher)";
    case 'X': return "exited";
    case 'D': return "blocked in the kernel (uninterruptible I/O)";
    case 'R': return "running but not reaching MPI";
    case 'S': return "sleeping but not reaching MPI";
    default: return {};
  }
}

Heartbeats::~Heartbeats() { stop(); }

void Heartbeats::start(MPI_Comm comm) {
  std::lock_guard<std::mutex> mpi_lock(mpi_mutex_);
  std::lock_guard<std::mutex> lock(mutex_);  // nothing beats or reads yet
  comm_ = comm;
  MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_, &size_));
  mine_.pid = static_cast<long>(getpid());
  gethostname(mine_.host, sizeof mine_.host - 1);
  started_ = std::chrono::steady_clock::now();
  peers_.assign(size_, PeerBeat{});
  peers_[rank_] = PeerBeat{mine_.host, mine_.pid, 0, started_};
  inbox_.assign(size_, Message{});
  sends_.assign(size_, {});
  recv_req_.assign(size_, MPI_REQUEST_NULL);
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    MPI_CHECK(MPI_Recv_init(&inbox_[peer], sizeof(Message), MPI_BYTE, peer, kHeartbeatTag, comm_,
                            &recv_req_[peer]));
    MPI_CHECK(MPI_Start(&recv_req_[peer]));
  }
}

bool Heartbeats::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return comm_ != MPI_COMM_NULL;
}

void Heartbeats::reap_sends() {
  for (auto& queue : sends_) {
    for (auto it = queue.begin(); it != queue.end();) {
      int done = 0;
      if (MPI_Test(&it->request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        done = 1;  // a peer that is gone fails its send; nothing more will come of it
      }
      it = done ? queue.erase(it) : std::next(it);
    }
  }
}

void Heartbeats::beat() {
  std::lock_guard<std::mutex> mpi_lock(mpi_mutex_);
  MPI_Comm comm = MPI_COMM_NULL;
  Message message;
  std::chrono::steady_clock::time_point now;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (comm_ == MPI_COMM_NULL || size_ == 1) return;
    now = std::chrono::steady_clock::now();
    peers_[rank_].last = now;
    mine_.count = ++sent_;
    message = mine_;
    comm = comm_;
  }
  reap_sends();
  for (int peer = 0; peer < size_; ++peer) {
    // Sends to a stopped peer stay unfinished once its socket buffers are full: cap them.
    if (peer == rank_ || sends_[peer].size() >= 16) continue;
    sends_[peer].push_back(PendingSend{message, MPI_REQUEST_NULL});
    PendingSend& send = sends_[peer].back();
    // A failed send (the peer is gone) shows up as silence in silent_ranks(); not an error here.
    MPI_Isend(&send.message, sizeof(Message), MPI_BYTE, peer, kHeartbeatTag, comm, &send.request);
  }
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_ || recv_req_[peer] == MPI_REQUEST_NULL) continue;
    for (;;) {  // one peer's heartbeats arrive in order; take all that are there
      int flag = 0;
      if (MPI_Test(&recv_req_[peer], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || !flag) break;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        PeerBeat& p = peers_[peer];
        inbox_[peer].host[sizeof inbox_[peer].host - 1] = '\0';
        p.host = inbox_[peer].host;
        p.pid = inbox_[peer].pid;
        p.count += 1;
        p.last = now;
      }
      if (MPI_Start(&recv_req_[peer]) != MPI_SUCCESS) break;
    }
  }
}

void Heartbeats::stop() {
  std::lock_guard<std::mutex> mpi_lock(mpi_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (comm_ == MPI_COMM_NULL) return;
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    for (auto& req : recv_req_) {
      if (req == MPI_REQUEST_NULL) continue;
      MPI_Cancel(&req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      MPI_Request_free(&req);
    }
    // Heartbeats are eager (under 100 bytes): they complete locally unless a peer
    // stopped reading long ago; those are cancelled rather than waited for.
    for (auto& queue : sends_) {
      for (auto& send : queue) {
        int done = 0;
        MPI_Test(&send.request, &done, MPI_STATUS_IGNORE);
        if (!done) {
          MPI_Cancel(&send.request);
          MPI_Request_free(&send.request);
        }
      }
    }
  }
  recv_req_.clear();
  sends_.clear();
  std::lock_guard<std::mutex> lock(mutex_);
  comm_ = MPI_COMM_NULL;
}

std::vector<int> Heartbeats::silent_ranks(double silent_s) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int> silent;
  if (comm_ == MPI_COMM_NULL) return silent;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    const auto since = peers_[peer].count > 0 ? peers_[peer].last : started_;
    if (seconds_since(since) > silent_s) silent.push_back(peer);
  }
  return silent;
}

std::vector<int> Heartbeats::gone_ranks(double silent_s) const {
  std::vector<int> gone = silent_ranks(silent_s);
  for (int peer : exited_ranks()) {
    if (std::find(gone.begin(), gone.end(), peer) == gone.end()) gone.push_back(peer);
  }
  std::sort(gone.begin(), gone.end());
  return gone;
}

std::vector<int> Heartbeats::exited_ranks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int> exited;
  for (int peer = 0; peer < static_cast<int>(peers_.size()); ++peer) {
    const PeerBeat& p = peers_[peer];
    if (peer == rank_ || p.count == 0 || p.host != mine_.host) continue;
    if (local_process_state(p.pid).rfind("exited", 0) == 0) exited.push_back(peer);
  }
  return exited;
}

std::vector<long> Heartbeats::local_peer_pids() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<long> pids;
  for (int peer = 0; peer < static_cast<int>(peers_.size()); ++peer) {
    const PeerBeat& p = peers_[peer];
    if (peer != rank_ && p.count > 0 && p.host == mine_.host && p.pid > 0) pids.push_back(p.pid);
  }
  return pids;
}

std::string Heartbeats::describe(int rank) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::ostringstream os;
  os << "rank " << rank;
  if (rank < 0 || rank >= static_cast<int>(peers_.size())) return os.str();
  const PeerBeat& p = peers_[rank];
  char age[32];
  if (p.count == 0) {
    std::snprintf(age, sizeof age, "%.1f", seconds_since(started_));
    os << ": no heartbeat at all in " << age << " s (it stopped or died before its heartbeats began)";
    return os.str();
  }
  std::snprintf(age, sizeof age, "%.1f", seconds_since(p.last));
  os << " (host " << p.host << ", pid " << p.pid << "): no heartbeat for " << age << " s";
  if (p.host == mine_.host) {
    const std::string state = local_process_state(p.pid);
    if (!state.empty()) os << "; the process is " << state;
  }
  return os.str();
}

}  // namespace trainer::runtime
