// TensorBoard event files (see tensorboard_events.hpp). The protobuf wire format is
// small enough to write by hand: varints, 64-bit and 32-bit little-endian fields, and
// length-delimited fields for strings and nested messages.
#include "util/tensorboard_events.hpp"

#include <unistd.h>  // gethostname, getpid

#include <cerrno>      // errno
#include <ctime>       // std::time
#include <cstring>     // std::memcpy, std::strerror
#include <filesystem>  // std::filesystem::create_directories, exists

#include "util/crc32c.hpp"  // masked_crc32c
#include "util/error.hpp"   // SystemError

namespace trainer {
namespace tfevents {
namespace {

// Field numbers of tensorflow/core/util/event.proto and framework/summary.proto.
constexpr int kEventWallTime = 1, kEventStep = 2, kEventFileVersion = 3, kEventSummary = 5, kEventSessionLog = 7;
constexpr int kSessionLogStatus = 1, kSessionLogStart = 1;
constexpr int kSummaryValue = 1;
constexpr int kValueTag = 1, kValueSimpleValue = 2;
constexpr int kWireVarint = 0, kWire64 = 1, kWireBytes = 2, kWire32 = 5;

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(char(v));
}

void put_key(std::string& out, int field, int wire) { put_varint(out, (std::uint64_t(field) << 3) | unsigned(wire)); }

template <class T>
void put_little_endian(std::string& out, T value) {  // x86 and arm64 are little-endian hosts
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void put_bytes(std::string& out, int field, const std::string& bytes) {
  put_key(out, field, kWireBytes);
  put_varint(out, bytes.size());
  out += bytes;
}

std::string event_header(double wall_time, std::int64_t step) {
  std::string out;
  put_key(out, kEventWallTime, kWire64);
  put_little_endian(out, wall_time);
  if (step != 0) {  // proto3: a zero step is the default and is left out
    put_key(out, kEventStep, kWireVarint);
    put_varint(out, std::uint64_t(step));
  }
  return out;
}

}  // namespace

std::string encode_file_version_event(double wall_time, const std::string& version) {
  std::string out = event_header(wall_time, 0);
  put_bytes(out, kEventFileVersion, version);
  return out;
}

std::string encode_scalar_event(double wall_time, std::int64_t step, const std::string& tag, float value) {
  std::string summary_value;
  put_bytes(summary_value, kValueTag, tag);
  put_key(summary_value, kValueSimpleValue, kWire32);
  put_little_endian(summary_value, value);
  std::string summary;
  put_bytes(summary, kSummaryValue, summary_value);
  std::string out = event_header(wall_time, step);
  put_bytes(out, kEventSummary, summary);
  return out;
}

std::string encode_session_start_event(double wall_time, std::int64_t step) {
  std::string session_log;
  put_key(session_log, kSessionLogStatus, kWireVarint);
  put_varint(session_log, kSessionLogStart);
  std::string out = event_header(wall_time, step);
  put_bytes(out, kEventSessionLog, session_log);
  return out;
}

std::string frame_record(const std::string& payload) {
  std::string out;
  const std::uint64_t length = payload.size();
  put_little_endian(out, length);
  put_little_endian(out, masked_crc32c(&length, sizeof length));
  out += payload;
  put_little_endian(out, masked_crc32c(payload.data(), payload.size()));
  return out;
}

}  // namespace tfevents

void EventFileWriter::Closer::operator()(std::FILE* f) const { std::fclose(f); }

EventFileWriter::EventFileWriter(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw SystemError("cannot create the TensorBoard folder " + dir + ": " + ec.message());
  char host[256] = "localhost";
  if (::gethostname(host, sizeof host) != 0) std::strcpy(host, "localhost");
  host[sizeof host - 1] = '\0';
  const long seconds = long(std::time(nullptr));
  const std::string stem = dir + "/events.out.tfevents." + std::to_string(seconds) + "." + host + "." +
                           std::to_string(::getpid()) + ".";
  for (int n = 0;; ++n) {  // two writers of one process in one second get distinct files
    path_ = stem + std::to_string(n);
    if (!std::filesystem::exists(path_)) break;
  }
  file_.reset(std::fopen(path_.c_str(), "wb"));
  if (!file_) throw SystemError("cannot create " + path_ + ": " + std::strerror(errno));
  write_record(tfevents::encode_file_version_event(double(seconds)));
  flush();
}

void EventFileWriter::add_scalar(const std::string& tag, float value, std::int64_t step, double wall_time) {
  write_record(tfevents::encode_scalar_event(wall_time, step, tag, value));
}

void EventFileWriter::add_session_start(std::int64_t step, double wall_time) {
  write_record(tfevents::encode_session_start_event(wall_time, step));
}

void EventFileWriter::write_record(const std::string& payload) {
  const std::string record = tfevents::frame_record(payload);
  if (std::fwrite(record.data(), 1, record.size(), file_.get()) != record.size())
    throw SystemError("cannot write " + path_ + ": " + std::strerror(errno));
}

void EventFileWriter::flush() {
  if (std::fflush(file_.get()) != 0) throw SystemError("cannot write " + path_ + ": " + std::strerror(errno));
}

}  // namespace trainer
