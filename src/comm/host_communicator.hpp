#pragma once
// Communicator for host buffers on top of a HostCollectives backend (MPI or Gloo).
// Every collective, synchronous or not, goes through one communication thread in
// submission order; synchronous calls wait for theirs. Each collective gets a
// sequence number and a deadline (`collective_timeout`); before it starts, the
// rank posts its arrival on the stall inspector's side channel, and when the
// deadline passes the inspector names the ranks that never arrived and aborts.
// avg = sum, then scale by 1/size.
#include <mpi.h>  // MPI_Comm

#include <atomic>  // std::atomic
#include <memory>  // std::unique_ptr

#include "comm/comm_thread.hpp"       // CommThread, Completion
#include "comm/communicator.hpp"      // Communicator, Work, ReduceOp
#include "comm/debug_skip.hpp"        // SkipCollective
#include "comm/host_collectives.hpp"  // HostCollectives, Deadline
#include "comm/stall_inspector.hpp"   // StallInspector

namespace trainer::comm {

class HostCommunicator final : public Communicator {
 public:
  // `watchdog` (may be null): the session's, whose heartbeats name silent ranks.
  // `skip`: the debugging stall of TRAINER_DEBUG_SKIP_COLLECTIVE (debug_skip.hpp).
  HostCommunicator(std::unique_ptr<HostCollectives> backend, MPI_Comm world, double timeout_s,
                   const runtime::Watchdog* watchdog = nullptr, SkipCollective skip = {});
  ~HostCommunicator() override;

  std::string name() const override { return backend_->name(); }
  int rank() const override { return backend_->rank(); }
  int size() const override { return backend_->size(); }
  bool uses_device_buffers() const override { return false; }
  bool runs_on_comm_thread() const { return thread_->threaded(); }

  void all_reduce(float* data, std::size_t count, ReduceOp op, compute::Stream& stream,
                  const char* what) override;
  void all_reduce(double* data, std::size_t count, ReduceOp op, compute::Stream& stream,
                  const char* what) override;
  std::unique_ptr<Work> all_reduce_async(float* data, std::size_t count, ReduceOp op,
                                         compute::Stream& stream, const char* what) override;
  void broadcast(float* data, std::size_t count, int root, compute::Stream& stream,
                 const char* what) override;
  void all_gather(const float* send, float* recv, std::size_t count_per_rank,
                  compute::Stream& stream, const char* what) override;
  void barrier(const char* what) override;
  void set_step(long step) override { step_.store(step); }

 private:
  // Runs `body` as the next collective on the communication thread, with arrival
  // posting, the deadline and the debug skip around it.
  template <typename Body>
  std::shared_ptr<Completion> submit(std::string what, Body body);

  std::unique_ptr<HostCollectives> backend_;
  StallInspector inspector_;
  const runtime::Watchdog* watchdog_;
  double timeout_s_;
  SkipCollective skip_;
  std::atomic<long> step_{0};
  long seq_ = 0;  // touched only by the communication thread
  std::unique_ptr<CommThread> thread_;  // last: joined before the rest goes away
};

}  // namespace trainer::comm
