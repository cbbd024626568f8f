#pragma once
// Scratch folders of the unit tests under the system temporary directory (never the
// source tree), removed when the test program exits. The training tests write
// checkpoints of a few hundred MB; left behind, every run of the suite added them to
// /tmp (about 70 GB on a shared machine before this), and a full disk fails CI.
#include <unistd.h>  // getpid

#include <filesystem>  // std::filesystem
#include <string>      // std::string
#include <vector>      // std::vector

namespace unit_test {

// A fresh, empty folder trainer_unit_<pid>_<tag>_<name>, removed at exit.
inline std::string scratch_dir(const std::string& tag, const std::string& name) {
  // The list of folders to remove: a function-local static, so its destructor runs
  // at the end of the test program, after every test case.
  struct Registry {
    std::vector<std::string> dirs;
    ~Registry() {
      std::error_code ignored;
      for (const auto& d : dirs) std::filesystem::remove_all(d, ignored);
    }
  };
  static Registry registry;
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("trainer_unit_" + std::to_string(getpid()) + "_" + tag + "_" + name)).string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  registry.dirs.push_back(dir);
  return dir;
}

}  // namespace unit_test
