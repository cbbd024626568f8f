#include "comm/host_communicator.hpp"

#include <algorithm>  // std::min, std::max
#include <chrono>     // std::chrono::duration
#include <optional>   // std::optional of the watchdog backstop
#include <string>     // std::string
#include <thread>     // std::this_thread::sleep_for
#include <utility>    // std::move

#include "util/error.hpp"  // SystemError, MPI_CHECK

namespace trainer::comm {

namespace {

// The communication thread and the main thread both call MPI (the stall
// inspector's side channel at least), which MPI allows only at this level.
bool mpi_allows_comm_thread() {
  int provided = MPI_THREAD_SINGLE;
  MPI_CHECK(MPI_Query_thread(&provided));
  return provided == MPI_THREAD_MULTIPLE;
}

template <typename T>
void scale(T* data, std::size_t count, T factor) {
  for (std::size_t i = 0; i < count; ++i) data[i] *= factor;
}

class HostWork final : public Work {
 public:
  explicit HostWork(std::shared_ptr<Completion> completion) : completion_(std::move(completion)) {}
  void wait(compute::Stream&) override { completion_->wait(); }
  double seconds() const override { return completion_->run_seconds(); }

 private:
  std::shared_ptr<Completion> completion_;
};

}  // namespace

HostCommunicator::HostCommunicator(std::unique_ptr<HostCollectives> backend, MPI_Comm world,
                                   double timeout_s, const runtime::Watchdog* watchdog, SkipCollective skip)
    : backend_(std::move(backend)),
      inspector_(world, backend_->name(), watchdog),
      watchdog_(watchdog),
      timeout_s_(timeout_s),
      skip_(skip),
      thread_(std::make_unique<CommThread>(mpi_allows_comm_thread())) {}

HostCommunicator::~HostCommunicator() { thread_.reset(); }

template <typename Body>
std::shared_ptr<Completion> HostCommunicator::submit(std::string what, Body body) {
  return thread_->submit([this, what = std::move(what), body]() {
    const long seq = ++seq_;
    const long step = step_.load();
    const auto timeout = std::chrono::duration<double>(timeout_s_);
    if (skip_.matches(backend_->rank(), seq)) {
      // Debug aid: never join, as a stuck rank would; the others abort the job.
      std::this_thread::sleep_for(2 * timeout + std::chrono::seconds(30));
      throw SystemError("TRAINER_DEBUG_SKIP_COLLECTIVE: rank " + std::to_string(backend_->rank()) +
                        " skipped collective #" + std::to_string(seq) + " and nobody aborted");
    }
    inspector_.arrive(seq);
    if (watchdog_) watchdog_->debug_stop_point("collective #" + std::to_string(seq));
    Deadline deadline;
    deadline.at = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(timeout);
    if (watchdog_) deadline.peer_exited = [this] { return !watchdog_->heartbeats().exited_ranks().empty(); };
    // The body checks `deadline` between MPI calls; should one of them never return
    // (Open MPI spinning on a connection a killed peer reset), the watchdog ends the
    // job a little after it, with its own report (the inspector's normally comes first).
    const double grace_s = std::min(2.0, std::max(0.2, timeout_s_));
    std::optional<runtime::Watchdog::Backstop> backstop;
    if (watchdog_ && timeout_s_ > 0)
      backstop.emplace(watchdog_->backstop(
          "collective '" + what + "' (#" + std::to_string(seq) + " on the " + backend_->name() + " communicator)",
          deadline.at + std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::duration<double>(grace_s + 1.0))));
    bool completed = false;
    try {
      completed = body(deadline);
    } catch (const std::exception& e) {
      // Usually a peer that died ("connection reset by peer"): say which one.
      throw SystemError(inspector_.failure_report(seq, what, step, e.what()));
    }
    if (completed) return;
    // A member's process exited (the MPI wait stops for that; Gloo's may have timed out
    // first): the collective could never end, and the report says so.
    if (deadline.peer_exited && deadline.peer_exited()) inspector_.report_exited_and_abort(seq, what, step);
    // Give late arrival messages a moment (grace_s: never longer than the timeout itself).
    inspector_.report_and_abort(seq, what, step, timeout_s_, grace_s);
  });
}

void HostCommunicator::all_reduce(float* data, std::size_t count, ReduceOp op, compute::Stream& stream,
                                  const char* what) {
  all_reduce_async(data, count, op, stream, what)->wait(stream);
}

void HostCommunicator::all_reduce(double* data, std::size_t count, ReduceOp op, compute::Stream&,
                                  const char* what) {
  const int n = size();
  submit(what, [this, data, count, op, n](const Deadline& deadline) {
    if (!backend_->sum(data, count, deadline)) return false;
    if (op == ReduceOp::avg) scale(data, count, 1.0 / n);
    return true;
  })->wait();
}

std::unique_ptr<Work> HostCommunicator::all_reduce_async(float* data, std::size_t count, ReduceOp op,
                                                         compute::Stream&, const char* what) {
  const int n = size();
  return std::make_unique<HostWork>(submit(what, [this, data, count, op, n](const Deadline& deadline) {
    if (!backend_->sum(data, count, deadline)) return false;
    if (op == ReduceOp::avg) scale(data, count, 1.0f / static_cast<float>(n));
    return true;
  }));
}

void HostCommunicator::broadcast(float* data, std::size_t count, int root, compute::Stream&,
                                 const char* what) {
  TRAINER_ASSERT(root >= 0 && root < size(), "broadcast root " << root << " out of range");
  submit(what, [this, data, count, root](const Deadline& deadline) {
    return backend_->broadcast(data, count, root, deadline);
  })->wait();
}

void HostCommunicator::all_gather(const float* send, float* recv, std::size_t count_per_rank,
                                  compute::Stream&, const char* what) {
  submit(what, [this, send, recv, count_per_rank](const Deadline& deadline) {
    return backend_->all_gather(send, recv, count_per_rank, deadline);
  })->wait();
}

void HostCommunicator::barrier(const char* what) {
  submit(what, [this](const Deadline& deadline) { return backend_->barrier(deadline); })->wait();
}

}  // namespace trainer::comm
