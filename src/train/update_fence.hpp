#pragma once
// A reader of the parameters and Adam moments that the optimizer's next update must
// wait for: the copy of a checkpoint snapshot that a CPU run makes off the training
// thread (train/checkpoint_writer.hpp), so an epoch boundary does not wait for it.
// The copy runs while the next step's forward and backward only read the
// parameters; the update then waits here, so the snapshot is exactly the state at
// the boundary.
#include <condition_variable>  // std::condition_variable
#include <mutex>               // std::mutex

namespace trainer::train {

class UpdateFence {
 public:
  // The reader is done (called once, by the thread that read).
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      released_ = true;
    }
    released_cv_.notify_all();
  }
  // Blocks until release().
  void wait() const {
    std::unique_lock<std::mutex> lock(mutex_);
    released_cv_.wait(lock, [this] { return released_; });
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable released_cv_;
  bool released_ = false;
};

}  // namespace trainer::train
