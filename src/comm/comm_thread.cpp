#include "comm/comm_thread.hpp"

#include <utility>  // std::move

namespace trainer::comm {

void Completion::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return done_; });
  if (error_) std::rethrow_exception(error_);
}

bool Completion::done() {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

void Completion::finish(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
    error_ = std::move(error);
  }
  cv_.notify_all();
}

CommThread::CommThread(bool threaded) : threaded_(threaded) {
  if (threaded_) thread_ = std::thread([this] { loop(); });
}

CommThread::~CommThread() {
  if (!threaded_) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::shared_ptr<Completion> CommThread::submit(std::function<void()> task) {
  auto completion = std::make_shared<Completion>();
  if (!threaded_) {
    std::exception_ptr error;
    try {
      task();
    } catch (...) {
      error = std::current_exception();
    }
    completion->finish(error);
    return completion;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(Task{std::move(task), completion});
  }
  cv_.notify_one();
  return completion;
}

void CommThread::loop() {
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and nothing left to run
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    std::exception_ptr error;
    try {
      task.run();
    } catch (...) {
      error = std::current_exception();
    }
    task.completion->finish(error);
  }
}

}  // namespace trainer::comm
