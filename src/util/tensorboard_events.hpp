#pragma once
// TensorBoard event files, written without TensorFlow or protobuf: a file of TFRecords
// (length, masked CRC-32C of the length, payload, masked CRC-32C of the payload), each
// payload a hand-encoded `tensorflow.Event` protobuf. The first record carries
// file_version "brain.Event:2"; every later one a Summary with one scalar, as
// torch.utils.tensorboard's add_scalar writes them. TensorBoard reads a directory of
// such files as one run and tolerates a truncated last record, so a killed process
// loses at most what it had not flushed.
#include <cstdint>  // std::int64_t
#include <cstdio>   // std::FILE
#include <memory>   // std::unique_ptr
#include <string>   // std::string

namespace trainer {

namespace tfevents {
// The protobuf bytes of Event{wall_time, step, file_version}.
std::string encode_file_version_event(double wall_time, const std::string& version = "brain.Event:2");
// The protobuf bytes of Event{wall_time, step, summary{value{tag, simple_value}}}.
std::string encode_scalar_event(double wall_time, std::int64_t step, const std::string& tag, float value);
// The protobuf bytes of Event{wall_time, step, session_log{status: START}}: a reader
// drops the events an earlier writer logged at steps >= `step` (a restarted run).
std::string encode_session_start_event(double wall_time, std::int64_t step);
// One TFRecord around `payload`.
std::string frame_record(const std::string& payload);
}  // namespace tfevents

class EventFileWriter {
 public:
  // Creates `dir` and its parents, and a new file
  // `events.out.tfevents.<unix seconds>.<host>.<pid>.<n>` in it (n: the first free).
  explicit EventFileWriter(const std::string& dir);
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  // Buffered; flush() makes it visible to a reader. Failures are SystemErrors.
  void add_scalar(const std::string& tag, float value, std::int64_t step, double wall_time);
  void add_session_start(std::int64_t step, double wall_time);
  void flush();
  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& payload);

  struct Closer {
    void operator()(std::FILE* f) const;
  };
  std::string path_;
  std::unique_ptr<std::FILE, Closer> file_;
};

}  // namespace trainer
