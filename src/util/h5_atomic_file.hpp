#pragma once
// An HDF5 file written atomically: created as `<path>.tmp-<pid>`, then flushed,
// closed and renamed to `path` by commit(), so a crash or an error on the way never
// leaves a half-written file under the final name (rank 0 writes shared files so).
#include <string>  // std::string

#include "util/h5.hpp"  // Handle, hid_t

namespace trainer::h5 {

class AtomicFile {
 public:
  // Creates the temporary file; `what` names the file in errors ("checkpoint file").
  // Failing to create it is a UserError (a folder the user cannot write to).
  AtomicFile(std::string path, const std::string& what);
  // Without commit() (an exception on the way), closes and removes the temporary file.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  hid_t get() const { return file_.get(); }

  // Flushes, closes (reporting failure) and renames the file to its final path;
  // on failure the temporary file is removed and SystemError thrown.
  void commit();

 private:
  std::string path_;
  std::string temp_path_;
  Handle file_;
  bool committed_ = false;
};

}  // namespace trainer::h5
