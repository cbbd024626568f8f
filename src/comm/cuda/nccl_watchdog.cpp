#include "comm/cuda/nccl_watchdog.hpp"

#include <iostream>  // std::cerr for the abort report
#include <sstream>   // std::ostringstream

namespace trainer::comm::nccl {

namespace {
constexpr auto kPollInterval = std::chrono::milliseconds(50);
}

Watchdog::Watchdog(ncclComm_t comm, int device, int rank, int size, double timeout_s)
    : comm_(comm),
      device_(device),
      rank_(rank),
      size_(size),
      timeout_s_(timeout_s),
      thread_([this] { run(); }) {}

Watchdog::~Watchdog() { stop(); }

void Watchdog::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::watch(std::shared_ptr<void> owner, cudaEvent_t done, const std::string& what,
                     long step) {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.push_back(Pending{std::move(owner), done, what, step, std::chrono::steady_clock::now()});
}

std::string Watchdog::message() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return message_;
}

void Watchdog::abort(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    message_ = why;
    pending_.clear();
  }
  // Flag first: the communicator checks it before every NCCL call.
  aborted_.store(true);
  std::cerr << "error: " << why << std::endl;
  ncclCommAbort(comm_);
}

void Watchdog::run() {
  cudaSetDevice(device_);  // events belong to the communicator's device
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, kPollInterval, [this] { return stop_; });
    if (stop_ || aborted_.load()) break;
    // Completed collectives leave the queue in order; the oldest pending one is
    // the one that can time out first.
    while (!pending_.empty() && cudaEventQuery(pending_.front().event) == cudaSuccess)
      pending_.pop_front();
    std::string why;
    ncclResult_t async_error = ncclSuccess;
    if (ncclCommGetAsyncError(comm_, &async_error) == ncclSuccess && async_error != ncclSuccess &&
        async_error != ncclInProgress) {
      std::ostringstream os;
      os << "[rank " << rank_ << " of " << size_ << "] NCCL reported an asynchronous error: "
         << ncclGetErrorString(async_error);
      if (!pending_.empty())
        os << " during collective '" << pending_.front().what << "' (step " << pending_.front().step
           << ")";
      const char* last = ncclGetLastError(comm_);
      if (last && *last) os << "; " << last;
      os << "; aborting the NCCL communicator";
      why = os.str();
    } else if (timeout_s_ > 0 && !pending_.empty()) {
      const auto& oldest = pending_.front();
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - oldest.start).count();
      if (waited > timeout_s_) {
        std::ostringstream os;
        os << "[rank " << rank_ << " of " << size_ << "] NCCL collective '" << oldest.what
           << "' (step " << oldest.step << ") did not complete within " << timeout_s_
           << " s (collective_timeout): another rank is stalled or has failed; aborting the "
              "NCCL communicator";
        why = os.str();
      }
    }
    if (!why.empty()) {
      lock.unlock();
      abort(why);
      return;
    }
  }
}

}  // namespace trainer::comm::nccl
