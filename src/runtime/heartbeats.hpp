#pragma once
// Per-rank heartbeats: every rank tells every other rank "I am alive" a few times a
// second, as tiny non-blocking messages on a reserved tag, so that a rank which
// stopped running (SIGSTOP, swapped out, a debugger, a dead node) can be named even
// when it is stuck *inside* a collective that every rank reached, or during start-up
// before any communicator exists.
//
// A heartbeat carries the sender's host name and process id, so a rank on the same
// host can also look at the silent process itself (/proc/<pid>/stat): stopped,
// exited, or still running but not reaching MPI.
//
// Only the watchdog thread calls beat() and start()/stop() (MPI calls need
// MPI_THREAD_MULTIPLE, since the main thread runs collectives meanwhile); any thread
// may ask silent_ranks() or describe().
#include <mpi.h>  // MPI_Comm, MPI_Request

#include <chrono>  // std::chrono::steady_clock
#include <list>    // std::list of in-flight sends
#include <mutex>   // std::mutex
#include <string>  // std::string
#include <vector>  // std::vector

namespace trainer::runtime {

// What one rank last told us about itself.
struct PeerBeat {
  std::string host;
  long pid = 0;
  long count = 0;  // heartbeats received so far
  std::chrono::steady_clock::time_point last;
};

class Heartbeats {
 public:
  Heartbeats() = default;
  ~Heartbeats();
  Heartbeats(const Heartbeats&) = delete;
  Heartbeats& operator=(const Heartbeats&) = delete;

  // Starts exchanging heartbeats over `comm` (not owned; point-to-point only, on a
  // tag nothing else uses, so no collective is needed to begin).
  void start(MPI_Comm comm);
  // Sends this rank's heartbeat to every peer and takes in what has arrived.
  void beat();
  // Cancels the pre-posted receives; called before MPI_Finalize.
  void stop();
  bool running() const;

  // Ranks (never this one) from which nothing has arrived for longer than
  // `silent_s` seconds (including ranks never heard from, once running that long).
  std::vector<int> silent_ranks(double silent_s) const;
  // silent_ranks(silent_s), plus exited_ranks().
  std::vector<int> gone_ranks(double silent_s) const;
  // Ranks on this host whose process has exited (/proc): certain at once, unlike
  // silence, which a stopped or slow rank shows too.
  std::vector<int> exited_ranks() const;
  // "rank 1 (host h, pid 123): no heartbeat for 12.3 s; the process is stopped
  // (SIGSTOP or a debugger)" for rank `rank`.
  std::string describe(int rank) const;
  // Process ids of the other ranks on this host that have sent a heartbeat.
  std::vector<long> local_peer_pids() const;
  int rank() const { return rank_; }

 private:
  struct Message {
    long count = 0;
    long pid = 0;
    char host[64] = {};
  };
  struct PendingSend {
    Message message;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  void reap_sends();

  // mutex_ guards peers_ and the state readers see, and is never held across an MPI
  // call: with Open MPI's TCP transport a send to a killed peer can stay inside MPI
  // (writev on a reset connection), and the readers (the watchdog's /proc checks, the
  // collectives' exited-peer test, the abort's report) must still answer then.
  // mpi_mutex_ serializes beat() and stop(), which own the MPI state below.
  mutable std::mutex mutex_;
  std::mutex mpi_mutex_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  long sent_ = 0;
  Message mine_;
  std::chrono::steady_clock::time_point started_;
  std::vector<PeerBeat> peers_;
  std::vector<Message> inbox_;          // one pre-posted receive per peer
  std::vector<MPI_Request> recv_req_;
  // Per peer, so that a stopped peer's unfinished sends never hold back the others';
  // std::list for stable MPI_Isend buffer addresses.
  std::vector<std::list<PendingSend>> sends_;
};

// What /proc says of process `pid` on this host: "stopped (SIGSTOP or a debugger)",
// "exited", "running" ... or an empty string when it cannot tell.
std::string local_process_state(long pid);

}  // namespace trainer::runtime
