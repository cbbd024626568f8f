// A file rewritten atomically on a thread of its own (see background_file_writer.hpp).
#include "util/background_file_writer.hpp"

#include "util/atomic_write.hpp"   // write_file_atomically
#include "util/idle_priority.hpp"  // run_this_thread_at_idle_priority

namespace trainer {

BackgroundFileWriter::BackgroundFileWriter(std::string path) : path_(std::move(path)) {}

BackgroundFileWriter::~BackgroundFileWriter() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!thread_.joinable()) return;
    changed_.wait(lock, [this] { return !has_pending_ && !writing_; });
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void BackgroundFileWriter::rethrow_failure() {
  if (!failure_) return;
  std::exception_ptr failure = failure_;
  failure_ = nullptr;
  std::rethrow_exception(failure);
}

void BackgroundFileWriter::write(std::string content) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    rethrow_failure();
    pending_ = std::move(content);
    has_pending_ = true;
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  }
  changed_.notify_all();
}

void BackgroundFileWriter::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return !has_pending_ && !writing_; });
  rethrow_failure();
}

void BackgroundFileWriter::run() {
  run_this_thread_at_idle_priority();  // never delays the training thread's next step
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stopping_ || has_pending_; });
    if (!has_pending_) return;  // stopping, nothing left
    std::string content = std::move(pending_);
    has_pending_ = false;
    writing_ = true;
    lock.unlock();
    std::exception_ptr failure;
    try {
      write_file_atomically(path_, content);
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    if (failure && !failure_) failure_ = failure;
    writing_ = false;
    changed_.notify_all();
  }
}

}  // namespace trainer
