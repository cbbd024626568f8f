#pragma once
// A fresh temporary folder per test (never the source tree), removed when the test
// ends. The training tests write checkpoints of a few hundred MB; left behind, every
// run of the suite added them to /tmp (about 70 GB on a shared machine once), and a
// full disk fails CI.
#include <unistd.h>  // getpid

#include <atomic>      // std::atomic
#include <filesystem>  // std::filesystem
#include <string>      // std::string

namespace unit_test {

class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag) {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("trainer-unit-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace unit_test
