#pragma once
// A file rewritten whole, now and then (metrics.csv), kept up to date by a thread of
// its own so that the caller never waits for the disk: each write is atomic
// (write_file_atomically: temporary file, fsync, rename, folder fsync), which costs
// 1-30 ms per write on an ordinary disk and more on a cluster file system.
//   - write() hands over the whole new content and returns. A content the thread has
//     not started yet is replaced by the newer one: only the newest matters.
//   - A failed write is thrown by the next write() or by wait(), never lost.
//   - wait() returns when the newest content is on disk.
//   - The destructor writes what is pending and waits; it cannot throw, so a caller
//     that must know calls wait() first.
// The thread starts with the first write (ranks that never write start none).
#include <condition_variable>  // std::condition_variable
#include <exception>           // std::exception_ptr
#include <mutex>               // std::mutex
#include <string>              // std::string
#include <thread>              // std::thread

namespace trainer {

class BackgroundFileWriter {
 public:
  explicit BackgroundFileWriter(std::string path);
  ~BackgroundFileWriter();
  BackgroundFileWriter(const BackgroundFileWriter&) = delete;
  BackgroundFileWriter& operator=(const BackgroundFileWriter&) = delete;

  const std::string& path() const { return path_; }
  // Queues `content` as the file's next version; throws an earlier write's error.
  void write(std::string content);
  // Until the newest content is written; throws its (or an earlier) error.
  void wait();

 private:
  void run();
  void rethrow_failure();  // with mutex_ held

  std::string path_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::string pending_;
  bool has_pending_ = false;
  bool writing_ = false;
  bool stopping_ = false;
  std::exception_ptr failure_;
  std::thread thread_;
};

}  // namespace trainer
