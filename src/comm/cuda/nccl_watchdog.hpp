#pragma once
// The watchdog of an NCCL communicator. Every collective registers the event
// recorded after it on the communication stream; a thread polls those events and
// ncclCommGetAsyncError. When a collective is still pending after the timeout, or
// NCCL reports an error, it prints which collective (name, step, rank) failed,
// aborts the communicator with ncclCommAbort (so no rank hangs forever) and keeps
// the message; the next call on the communicator throws it.
#include <cuda_runtime_api.h>  // cudaEvent_t
#include <nccl.h>              // ncclComm_t

#include <atomic>              // std::atomic
#include <chrono>              // std::chrono::steady_clock
#include <condition_variable>  // std::condition_variable
#include <deque>               // std::deque of pending collectives
#include <memory>              // std::shared_ptr
#include <mutex>               // std::mutex
#include <string>              // std::string
#include <thread>              // std::thread

namespace trainer::comm::nccl {

class Watchdog {
 public:
  // timeout_s <= 0: no timeout, asynchronous errors only.
  // `device` is selected in the watchdog thread before it queries events.
  Watchdog(ncclComm_t comm, int device, int rank, int size, double timeout_s);
  ~Watchdog();  // stop()
  // Ends the polling thread (does not abort); idempotent.
  void stop();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Starts the clock of a collective that completes when `done` fires. The event
  // is owned by the caller and must outlive the watch (the communicator keeps it
  // in its Work or in its own pool until the event has completed).
  void watch(std::shared_ptr<void> done_event_owner, cudaEvent_t done, const std::string& what,
             long step);
  // True once the communicator was aborted; message() says why.
  bool aborted() const { return aborted_.load(); }
  std::string message() const;

 private:
  struct Pending {
    std::shared_ptr<void> owner;  // keeps the event alive while watched
    cudaEvent_t event;
    std::string what;
    long step;
    std::chrono::steady_clock::time_point start;
  };
  void run();
  void abort(const std::string& why);

  ncclComm_t comm_;
  int device_, rank_, size_;
  double timeout_s_;
  std::atomic<bool> aborted_{false};
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::deque<Pending> pending_;
  std::string message_;
  std::thread thread_;
};

}  // namespace trainer::comm::nccl
