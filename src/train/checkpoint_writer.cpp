// The background checkpoint writer (see checkpoint_writer.hpp).
#include "train/checkpoint_writer.hpp"

#include <algorithm>  // std::find

#include "util/error.hpp"          // SystemError
#include "util/idle_priority.hpp"  // run_this_thread_at_idle_priority

namespace trainer::train {

CheckpointWriter::CheckpointWriter(const model::ParameterStore& store)
    : store_(store), thread_([this] { run(); }), copier_([this] { run_copies(); }) {}

CheckpointWriter::~CheckpointWriter() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return idle(); });
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
  copier_.join();
}

std::unique_ptr<CheckpointSnapshot> CheckpointWriter::acquire(const std::vector<std::string>& paths) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto covered = [&] {
    for (const auto& p : waiting_.paths)
      if (std::find(paths.begin(), paths.end(), p) == paths.end()) return false;
    return true;
  };
  changed_.wait(lock, [&] { return !copying_.snapshot && (!waiting_.snapshot || covered()); });
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
    // acquire() left neither slot taken (it waits for the copier and takes a
    // superseded snapshot), and the loop fills one snapshot at a time.
    Job& slot = snapshot->deferred.empty() ? waiting_ : copying_;
    slot = Job{std::move(snapshot), std::move(paths)};
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
    changed_.wait(lock, [this] { return idle(); });
  }
  check();
}

void CheckpointWriter::run_copies() {
  // The copy runs on cores the step leaves idle; when there are none, the
  // optimizer's wait for it frees one.
  run_this_thread_at_idle_priority();
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stopping_ || copying_.snapshot; });
    if (!copying_.snapshot) return;  // stopping, nothing left
    lock.unlock();
    complete_deferred_copies(*copying_.snapshot);  // the loop does not touch copying_ meanwhile
    lock.lock();
    changed_.wait(lock, [this] { return !waiting_.snapshot; });  // empty already (see submit)
    waiting_ = std::move(copying_);
    copying_ = Job{};
    changed_.notify_all();
  }
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
