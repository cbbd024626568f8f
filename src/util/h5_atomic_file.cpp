// Atomic HDF5 file writing: temporary file, flush, close, rename (see h5_atomic_file.hpp).
#include "util/h5_atomic_file.hpp"

#include <unistd.h>  // getpid

#include <cerrno>   // errno
#include <cstdio>   // std::rename, std::remove
#include <cstring>  // std::strerror

#include "util/error.hpp"  // UserError, SystemError

namespace trainer::h5 {

AtomicFile::AtomicFile(std::string path, const std::string& what)
    : path_(std::move(path)), temp_path_(path_ + ".tmp-" + std::to_string(::getpid())) {
  silence_errors_on_this_thread();
  const hid_t id = H5Fcreate(temp_path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (id < 0)
    throw UserError("cannot create " + what + " '" + temp_path_ + "': " + last_error_message(),
                    "is the output folder writable?");
  file_ = Handle(id, H5Fclose);
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  file_.reset();
  std::remove(temp_path_.c_str());
}

void AtomicFile::commit() {
  H5_CHECK(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL));
  H5_CHECK(file_.close());
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    const int error = errno;  // before anything else can touch it
    throw SystemError("cannot rename '" + temp_path_ + "' to '" + path_ + "': " + std::strerror(error));
  }
  committed_ = true;
}

}  // namespace trainer::h5
