// Atomic HDF5 file writing: temporary file, flush, close, fsync, rename (see h5_atomic_file.hpp).
#include "util/h5_atomic_file.hpp"

#include "util/error.hpp"        // UserError
#include "util/h5_checksum.hpp"  // checksummed_file_creation, write_checksum_record

namespace trainer::h5 {

AtomicFile::AtomicFile(std::string path, const std::string& what, Checksum checksum)
    : checksum_(checksum), pending_(std::move(path)) {
  silence_errors_on_this_thread();
  const Handle creation = checksum == Checksum::record ? checksummed_file_creation() : Handle();
  const hid_t id = H5Fcreate(pending_.temp_path().c_str(), H5F_ACC_TRUNC,
                             creation ? creation.get() : H5P_DEFAULT, H5P_DEFAULT);
  if (id < 0)
    throw UserError("cannot create " + what + " '" + pending_.temp_path() + "': " + last_error_message(),
                    "is the output folder writable?");
  file_ = Handle(id, H5Fclose);
}

AtomicFile::~AtomicFile() { file_.reset(); }  // then pending_ removes the temporary file unless committed

void AtomicFile::commit() {
  H5_CHECK(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL));
  H5_CHECK(file_.close());
  if (checksum_ == Checksum::record) write_checksum_record(pending_.temp_path());
  pending_.commit();
}

}  // namespace trainer::h5
