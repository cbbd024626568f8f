#include "comm/comm_thread.hpp"

#include <chrono>   // std::chrono::steady_clock
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

double Completion::run_seconds() {
  std::lock_guard<std::mutex> lock(mutex_);
  return run_seconds_;
}

void Completion::finish(std::exception_ptr error, double run_seconds) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
    error_ = std::move(error);
    run_seconds_ = run_seconds;
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
    run(task, *completion);
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
    run(task.run, *task.completion);
  }
}

void CommThread::run(const std::function<void()>& task, Completion& completion) {
  const auto start = std::chrono::steady_clock::now();
  std::exception_ptr error;
  try {
    task();
  } catch (...) {
    error = std::current_exception();
  }
  completion.finish(error, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace trainer::comm
