#pragma once
// The side channel that lets a rank whose collective missed its deadline name the
// ranks that never arrived (after Horovod's stall inspector).
//
// Before each collective, every rank posts "I arrived at collective #seq" to every
// other rank as a tiny non-blocking message on a private duplicate of the world
// communicator; receives are pre-posted, so nothing waits on them. When a
// collective times out, the rank drains these messages for a short grace period,
// prints which collective (`what`, number, step) and which ranks have not reached
// it (with the last collective each of them did reach), and aborts the job with
// MPI_Abort: the other ranks are stuck in the same collective, so no exception
// could unwind them.
#include <mpi.h>  // MPI_Comm, MPI_Request

#include <list>    // std::list of in-flight sends
#include <string>  // std::string
#include <vector>  // std::vector

#include "runtime/owned_mpi_comm.hpp"  // runtime::OwnedMpiComm
#include "runtime/watchdog.hpp"     // runtime::Watchdog: heartbeats of every rank

namespace trainer::comm {

class StallInspector {
 public:
  // `world` is duplicated for the side channel and is the communicator aborted.
  // `watchdog` (may be null) has the heartbeats that tell a rank which stopped or
  // died inside a collective from one that is merely late.
  StallInspector(MPI_Comm world, std::string backend, const runtime::Watchdog* watchdog = nullptr);
  ~StallInspector();
  StallInspector(const StallInspector&) = delete;
  StallInspector& operator=(const StallInspector&) = delete;

  // Tells every other rank that this rank reached collective #seq.
  void arrive(long seq);
  // Ranks that have not reported reaching collective #seq (after receiving
  // everything that has arrived so far).
  std::vector<int> missing(long seq);
  // Text of the timeout report (also used by tests).
  std::string report(long seq, const std::string& what, long step, double timeout_s);
  // The message for a collective that failed with an error (`cause`, e.g. Gloo's
  // "connection closed by peer") rather than a timeout: it names the ranks whose
  // process exited or went silent, waiting up to two seconds for heartbeats to tell.
  std::string failure_report(long seq, const std::string& what, long step, const std::string& cause);
  // Waits up to `grace_s` for late arrival messages, prints the report on stderr
  // and aborts the job with a non-zero exit code.
  [[noreturn]] void report_and_abort(long seq, const std::string& what, long step, double timeout_s,
                                     double grace_s);
  // For a collective that stopped waiting because a member's process exited (its
  // request would stay pending for good): names it and aborts the job.
  [[noreturn]] void report_exited_and_abort(long seq, const std::string& what, long step);

 private:
  struct PendingSend {
    long value = 0;
    std::vector<MPI_Request> requests;
  };
  void drain();
  void reap_sends(bool block);
  [[noreturn]] void abort_job(const std::string& report) const;

  // "rank 1 (host h, pid 2): no heartbeat for 9.1 s; the process is stopped" for each
  // rank that has gone silent (none without heartbeats).
  std::vector<std::string> silent_rank_lines() const;

  MPI_Comm world_;
  const runtime::Watchdog* watchdog_;
  runtime::OwnedMpiComm channel_;
  std::string backend_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<std::string> hosts_;    // each rank's host name, for the report
  std::vector<long> latest_;          // latest collective each rank reported reaching
  std::vector<long> recv_value_;      // one pre-posted receive per peer
  std::vector<MPI_Request> recv_req_;
  std::list<PendingSend> sends_;      // stable addresses for MPI_Isend buffers
};

}  // namespace trainer::comm
