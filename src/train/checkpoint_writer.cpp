// The background checkpoint writer (see checkpoint_writer.hpp).
#include "train/checkpoint_writer.hpp"

#include <algorithm>  // std::find

#include "util/error.hpp"  // SystemError

namespace trainer::train {

CheckpointWriter::CheckpointWriter(const model::ParameterStore& store)
    : store_(store), thread_([this] { run(); }) {}

CheckpointWriter::~CheckpointWriter() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return !waiting_.snapshot && !writing_; });
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

std::unique_ptr<CheckpointSnapshot> CheckpointWriter::acquire(const std::vector<std::string>& paths) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto covered = [&] {
    for (const auto& p : waiting_.paths)
      if (std::find(paths.begin(), paths.end(), p) == paths.end()) return false;
    return true;
  };
  changed_.wait(lock, [&] { return !waiting_.snapshot || covered(); });
  if (waiting_.snapshot) {  // superseded: its files get the newer state
    waiting_.paths.clear();
    return std::move(waiting_.snapshot);
  }
  if (!free_.empty()) {
    auto snapshot = std::move(free_.back());
    free_.pop_back();
    return snapshot;
  }
  return std::make_unique<CheckpointSnapshot>();
}

void CheckpointWriter::submit(std::unique_ptr<CheckpointSnapshot> snapshot, std::vector<std::string> paths) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    waiting_ = Job{std::move(snapshot), std::move(paths)};
  }
  changed_.notify_all();
}

bool CheckpointWriter::failed() {
  std::lock_guard<std::mutex> lock(mutex_);
  return !failure_.empty();
}

void CheckpointWriter::check() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failure_.empty()) return;
  const std::string failure = std::move(failure_);
  failure_.clear();
  throw SystemError("a checkpoint could not be written: " + failure);
}

void CheckpointWriter::wait() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return !waiting_.snapshot && !writing_; });
  }
  check();
}

void CheckpointWriter::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stopping_ || waiting_.snapshot; });
    if (!waiting_.snapshot) return;  // stopping, nothing left
    Job job = std::move(waiting_);
    waiting_ = Job{};
    writing_ = true;
    lock.unlock();
    changed_.notify_all();  // acquire() may proceed: nothing waits now
    std::string error;
    try {
      for (const auto& path : job.paths) write_snapshot(path, *job.snapshot, store_);
    } catch (const std::exception& e) {
      error = e.what();
    }
    lock.lock();
    if (!error.empty() && failure_.empty()) failure_ = error;
    free_.push_back(std::move(job.snapshot));
    writing_ = false;
    changed_.notify_all();
  }
}

}  // namespace trainer::train
