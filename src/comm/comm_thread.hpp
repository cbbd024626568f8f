#pragma once
// The communication thread of a host communicator: it runs collectives one at a
// time in the order they were submitted. Since every rank submits the same
// collectives in the same order, the order on the wire is the same everywhere,
// and a gradient bucket's all-reduce runs while the caller computes the next
// layer's backward. With `threaded == false` (MPI without MPI_THREAD_MULTIPLE)
// each task runs at once on the caller's thread instead.
#include <condition_variable>  // std::condition_variable
#include <deque>               // std::deque
#include <exception>           // std::exception_ptr
#include <functional>          // std::function
#include <memory>              // std::shared_ptr
#include <mutex>               // std::mutex
#include <thread>              // std::thread

namespace trainer::comm {

// Completion of one submitted task; wait() rethrows the task's exception.
class Completion {
 public:
  void wait();
  bool done();
  void finish(std::exception_ptr error, double run_seconds = -1.0);
  // How long the task ran on the communication thread (-1 before it finished).
  double run_seconds();

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
  double run_seconds_ = -1.0;
};

class CommThread {
 public:
  explicit CommThread(bool threaded);
  ~CommThread();  // runs what is queued, then joins
  CommThread(const CommThread&) = delete;
  CommThread& operator=(const CommThread&) = delete;

  bool threaded() const { return threaded_; }
  std::shared_ptr<Completion> submit(std::function<void()> task);

 private:
  struct Task {
    std::function<void()> run;
    std::shared_ptr<Completion> completion;
  };
  void loop();
  static void run(const std::function<void()>& task, Completion& completion);

  bool threaded_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  bool stopping_ = false;
  std::thread thread_;  // last member: started after the rest is ready
};

}  // namespace trainer::comm
