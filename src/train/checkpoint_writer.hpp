#pragma once
// Checkpoints written in the background. The training loop takes a snapshot at an
// epoch's end (copies queued on its stream into host memory, pinned on GPUs) and
// goes on; a writer thread waits for the copies and writes the files with the
// atomic rename of h5::AtomicFile, so the next epoch never waits for the disk.
//   - One write is in flight at a time; a newer snapshot supersedes one still
//     waiting for the writer, unless the waiting one also goes to a file the newer
//     one does not (a best.h5), in which case the loop waits for it to start.
//   - A failed write is kept and thrown at the next check(), at the next epoch
//     boundary: never a silent loss.
//   - A snapshot with deferred copies (CPU runs) is copied first by a copier
//     thread, while the next step's forward and backward run; the optimizer's
//     update waits for that copy, not for the disk.
//   - wait() and the destructor wait until everything submitted is on disk.
// Only rank 0 writes checkpoints; the other ranks never construct one.
#include <condition_variable>  // std::condition_variable
#include <memory>              // std::unique_ptr
#include <mutex>               // std::mutex
#include <string>              // std::string
#include <thread>              // std::thread
#include <vector>              // std::vector

#include "model/parameter_store.hpp"  // model::ParameterStore
#include "train/checkpoint.hpp"       // CheckpointSnapshot

namespace trainer::train {

class CheckpointWriter {
 public:
  explicit CheckpointWriter(const model::ParameterStore& store);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // A snapshot to fill for `paths`: a free one, or the waiting one when `paths`
  // covers all of its files (it is then superseded). May wait for the writer.
  std::unique_ptr<CheckpointSnapshot> acquire(const std::vector<std::string>& paths);
  // Queues the filled snapshot for `paths` (the same list given to acquire); its
  // deferred copies, if any, are made first on the copier thread.
  void submit(std::unique_ptr<CheckpointSnapshot> snapshot, std::vector<std::string> paths);
  // Whether an earlier write failed (check() then throws its error).
  bool failed();
  // Throws the error of a failed earlier write (once).
  void check();
  // Waits until every submitted snapshot is written, then check().
  void wait();

 private:
  void run();       // the writer thread
  void run_copies();  // the copier thread
  bool idle() const { return !copying_.snapshot && !waiting_.snapshot && !writing_; }

  struct Job {
    std::unique_ptr<CheckpointSnapshot> snapshot;
    std::vector<std::string> paths;
  };
  const model::ParameterStore& store_;
  std::mutex mutex_;
  std::condition_variable changed_;
  Job copying_;                                 // submitted, deferred copies not made yet
  Job waiting_;                                 // submitted, not started
  bool writing_ = false;                        // the thread holds a job
  std::vector<std::unique_ptr<CheckpointSnapshot>> free_;  // reusable host memory
  std::string failure_;
  bool stopping_ = false;
  std::thread thread_;  // last: start after everything they read
  std::thread copier_;
};

}  // namespace trainer::train
