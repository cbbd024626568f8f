#pragma once
// Helpers for the config tests: a scratch folder with files, stdout capture and
// a check that a call throws a UserError with exit code 2 and the expected text.
#include <catch2/catch.hpp>  // REQUIRE, CHECK, FAIL

#include <filesystem>  // std::filesystem::path, temp_directory_path
#include <fstream>     // std::ofstream
#include <functional>  // std::function
#include <iostream>    // std::cout
#include <random>      // std::random_device
#include <sstream>     // std::ostringstream
#include <string>      // std::string
#include <vector>      // std::vector

#include "app/config_parse.hpp"  // parse_command_line, CommandLine
#include "util/error.hpp"        // UserError, kExitUsage

namespace config_test {

// A fresh folder under the system temp dir, removed at scope exit.
class ScratchDir {
 public:
  ScratchDir() {
    path_ = std::filesystem::temp_directory_path() / ("trainer-config-test-" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  // Writes `text` to `name` inside the folder and returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    const auto file = path_ / name;
    std::ofstream(file) << text;
    return file.string();
  }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// Redirects std::cout into a string for its lifetime.
class CaptureStdout {
 public:
  CaptureStdout() : old_(std::cout.rdbuf(buffer_.rdbuf())) {}
  ~CaptureStdout() { std::cout.rdbuf(old_); }
  std::string text() const { return buffer_.str(); }

 private:
  std::ostringstream buffer_;
  std::streambuf* old_;
};

inline trainer::app::CommandLine parse(const std::vector<std::string>& args) {
  boost::program_options::options_description none;
  return trainer::app::parse_command_line("train", args, none);
}

// The call must throw a UserError (exit code 2) whose message contains every
// string in `message_parts` and whose hint contains `hint_part`.
inline void expect_user_error(const std::function<void()>& call, const std::vector<std::string>& message_parts,
                              const std::string& hint_part = "") {
  try {
    call();
  } catch (const trainer::UserError& e) {
    const std::string message = e.what();
    INFO("message: " << message << "\nhint: " << e.hint());
    CHECK(e.exit_code() == trainer::kExitUsage);
    for (const auto& part : message_parts) CHECK(message.find(part) != std::string::npos);
    CHECK(e.hint().find(hint_part) != std::string::npos);
    if (!hint_part.empty()) CHECK_FALSE(e.hint().empty());
    return;
  }
  FAIL("expected a UserError mentioning " << (message_parts.empty() ? "" : message_parts.front()));
}

}  // namespace config_test
