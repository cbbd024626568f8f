// TensorBoard event files: CRC-32C against the published check values, the protobuf
// bytes of each event kind, and the TFRecord framing. That TensorBoard itself reads
// the files is checked by tests/integration/train_tensorboard.sh.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "util/crc32c.hpp"
#include "util/tensorboard_events.hpp"

using namespace trainer;

namespace {
std::string bytes_of(double v) {
  std::string s(8, '\0');
  std::memcpy(&s[0], &v, 8);
  return s;
}
std::string bytes_of(float v) {
  std::string s(4, '\0');
  std::memcpy(&s[0], &v, 4);
  return s;
}
std::uint32_t read_u32(const std::string& s, std::size_t at) {
  std::uint32_t v;
  std::memcpy(&v, s.data() + at, 4);
  return v;
}
}  // namespace

TEST_CASE("CRC-32C matches the published check values", "[util][tensorboard]") {
  CHECK(crc32c("123456789", 9) == 0xE3069283u);  // the standard check value
  const std::string zeros(32, '\0'), ones(32, '\xff');
  CHECK(crc32c(zeros.data(), zeros.size()) == 0x8A9136AAu);  // RFC 3720, B.4
  CHECK(crc32c(ones.data(), ones.size()) == 0x62A8AB43u);
  std::string ascending(32, '\0');
  for (int i = 0; i < 32; ++i) ascending[i] = char(i);
  CHECK(crc32c(ascending.data(), ascending.size()) == 0x46DD794Eu);
  CHECK(crc32c("", 0) == 0u);
}

TEST_CASE("masked CRC-32C is TFRecord's rotation plus offset", "[util][tensorboard]") {
  const std::uint32_t crc = crc32c("123456789", 9);
  CHECK(masked_crc32c("123456789", 9) == ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

TEST_CASE("a scalar event is Event{wall_time, step, summary{value{tag, simple_value}}}", "[util][tensorboard]") {
  const std::string got = tfevents::encode_scalar_event(1.5, 300, "val_supervised_loss", 0.25f);
  std::string value = std::string("\x0a\x13") + "val_supervised_loss" + "\x15" + bytes_of(0.25f);
  std::string summary = std::string("\x0a") + char(value.size()) + value;
  std::string want = "\x09" + bytes_of(1.5) + "\x10\xac\x02" + "\x2a" + char(summary.size()) + summary;
  CHECK(got == want);
}

TEST_CASE("the first event names the file version; a zero step is left out", "[util][tensorboard]") {
  const std::string got = tfevents::encode_file_version_event(2.0);
  CHECK(got == "\x09" + bytes_of(2.0) + "\x1a\x0d" + "brain.Event:2");
}

TEST_CASE("a session start is Event{step, session_log{status: START}}", "[util][tensorboard]") {
  const std::string got = tfevents::encode_session_start_event(0.5, 7);
  CHECK(got == "\x09" + bytes_of(0.5) + "\x10\x07" + std::string("\x3a\x02\x08\x01", 4));
}

TEST_CASE("a TFRecord is length, masked CRC of it, payload, masked CRC of it", "[util][tensorboard]") {
  const std::string payload = "hello";
  const std::string rec = tfevents::frame_record(payload);
  REQUIRE(rec.size() == 8 + 4 + payload.size() + 4);
  std::uint64_t length;
  std::memcpy(&length, rec.data(), 8);
  CHECK(length == payload.size());
  CHECK(read_u32(rec, 8) == masked_crc32c(rec.data(), 8));
  CHECK(rec.substr(12, payload.size()) == payload);
  CHECK(read_u32(rec, 12 + payload.size()) == masked_crc32c(payload.data(), payload.size()));
}

TEST_CASE("an event file starts with the file-version record and gets a fresh name", "[util][tensorboard]") {
  const auto dir = std::filesystem::temp_directory_path() / ("trainer_unit_tb_" + std::to_string(getpid())) / "a" / "b";
  std::filesystem::remove_all(dir.parent_path().parent_path());
  std::string first_path;
  {
    EventFileWriter w(dir.string());
    first_path = w.path();
    CHECK(std::filesystem::path(w.path()).filename().string().rfind("events.out.tfevents.", 0) == 0);
    w.add_scalar("x", 1.f, 1, 3.0);
    w.flush();
    EventFileWriter second(dir.string());
    CHECK(second.path() != w.path());  // same second, same process: another file
  }
  std::ifstream in(first_path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string version = tfevents::frame_record(tfevents::encode_file_version_event(0));
  REQUIRE(text.size() > version.size());
  std::uint64_t length;
  std::memcpy(&length, text.data(), 8);
  CHECK(length == tfevents::encode_file_version_event(0).size());
  CHECK(text.find("brain.Event:2") != std::string::npos);
  CHECK(text.substr(text.size() - tfevents::frame_record(tfevents::encode_scalar_event(3.0, 1, "x", 1.f)).size()) ==
        tfevents::frame_record(tfevents::encode_scalar_event(3.0, 1, "x", 1.f)));
  std::filesystem::remove_all(dir.parent_path().parent_path());
}
