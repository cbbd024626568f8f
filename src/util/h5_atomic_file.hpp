#pragma once
// An HDF5 file written atomically: created as `<path>.tmp-<pid>`, then flushed,
// closed, fsynced and renamed to `path` by commit() (util/atomic_write.hpp), so a
// crash, a signal or an error on the way never leaves a half-written file under
// the final name (rank 0 writes shared files so).
#include <string>  // std::string

#include "util/atomic_write.hpp"  // PendingFile
#include "util/h5.hpp"            // Handle, hid_t

namespace trainer::h5 {

// Whether the file carries the checksum record of util/h5_checksum.hpp (data sets
// and checkpoints, which the trainer reads back) or not (exchange files for Python).
enum class Checksum { none, record };

class AtomicFile {
 public:
  // Creates the temporary file; `what` names the file in errors ("checkpoint file").
  // Failing to create it is a UserError (a folder the user cannot write to).
  AtomicFile(std::string path, const std::string& what, Checksum checksum = Checksum::none);
  // Without commit() (an exception on the way), closes and removes the temporary file.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  hid_t get() const { return file_.get(); }

  // Flushes, closes (reporting failure), writes the checksum record if asked for,
  // fsyncs and renames the file to its final path; on failure the temporary file is
  // removed and SystemError thrown.
  void commit();

 private:
  Checksum checksum_;
  PendingFile pending_;  // declared before file_: the file closes before the temporary is removed
  Handle file_;
};

}  // namespace trainer::h5
