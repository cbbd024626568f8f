#pragma once
// What the harnesses share: one scratch file per fuzzing process (the parsers
// under test read paths, not memory), the rule for what counts as a finding, and
// the check that no HDF5 handle outlives an input.
#include <unistd.h>  // getpid

#include <cstddef>     // std::size_t
#include <cstdio>      // std::fprintf
#include <cstdlib>     // std::abort
#include <exception>   // std::exception
#include <filesystem>  // std::filesystem::temp_directory_path, remove
#include <fstream>     // std::ofstream
#include <string>      // std::string

#include <hdf5.h>  // H5Fget_obj_count, ssize_t

#include "util/error.hpp"  // UserError

namespace trainer::fuzz {

// A file under the temp folder, rewritten for every input and removed at exit;
// one path per process, so fuzzing with -jobs/-workers does not share it.
class ScratchFile {
 public:
  explicit ScratchFile(const std::string& suffix)
      : path_((std::filesystem::temp_directory_path() /
               ("trainer-fuzz-" + std::to_string(::getpid()) + suffix)).string()) {}
  ~ScratchFile() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  const std::string& path() const { return path_; }
  void write(const void* data, std::size_t size) const {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) finding("cannot write the scratch file " + path_);
  }

  [[noreturn]] static void finding(const std::string& what) {
    std::fprintf(stderr, "fuzz finding: %s\n", what.c_str());
    std::abort();  // libFuzzer saves the input as crash-<sha1>
  }

 private:
  std::string path_;
};

// Runs one parse. A UserError is the parser rejecting bad input as it should;
// any other exception (SystemError, std::bad_alloc, std::out_of_range, ...) would
// reach the user as an internal error and is a finding, like a crash or a
// sanitizer report.
template <class Parse>
void expect_user_errors_only(Parse&& parse) {
  try {
    parse();
  } catch (const UserError&) {
  } catch (const std::exception& e) {
    ScratchFile::finding(std::string("exception other than UserError: ") + e.what());
  }
}

// After an input is done with, no HDF5 identifier may still be open: a leaked
// handle keeps the file open (and locked) for the rest of the run.
inline void expect_no_open_hdf5_objects() {
  const ssize_t open = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
  if (open != 0) ScratchFile::finding(std::to_string(open) + " HDF5 objects still open after the input");
}

}  // namespace trainer::fuzz
