#pragma once
// Thin RAII layer over the HDF5 C API, shared by the dataset format (data) and the
// checkpoints (train): one owner class for every kind of hid_t and an H5_CHECK macro
// that reports the call, file, line and HDF5's own message. Typed reads and writes
// are in util/h5_io.hpp, the temp-file-and-rename writer in util/h5_atomic_file.hpp.
//
// HDF5 here is a thread-safe build: every call takes the library's global lock, so
// callers keep their heavy work (decoding, resizing, augmentation) outside HDF5.
#include <hdf5.h>  // hid_t, herr_t, H5*

#include <string>  // std::string
#include <vector>  // std::vector

#include "util/error.hpp"  // SystemError, detail::throw_system_error

namespace trainer::h5 {

// Stops HDF5 from printing its error stack on stderr for the calling thread (the
// automatic printing is per thread in thread-safe builds); we report errors ourselves.
void silence_errors_on_this_thread();

// The calling thread's HDF5 error stack in one line: the failed API call's message,
// then the innermost cause in parentheses ("unknown HDF5 error" if empty). Clears it.
std::string last_error_message();

// A failed HDF5 call: a SystemError of its own kind, so that readers of user-named
// files can tell "HDF5 could not make sense of the file" (a damaged file: the user's
// to fix, exit 2) from other failures on the way (a device, memory).
class Error : public SystemError {
 public:
  using SystemError::SystemError;
};
[[noreturn]] void throw_error(const char* call, const char* file, int line);

template <typename T>
T check(T rc, const char* call, const char* file, int line) {
  if (rc < 0) throw_error(call, file, line);
  return rc;
}

// One owned hid_t, closed with the matching H5*close function.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& other) noexcept : id_(other.id_), closer_(other.closer_) { other.id_ = H5I_INVALID_HID; }
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = other.id_;
      closer_ = other.closer_;
      other.id_ = H5I_INVALID_HID;
    }
    return *this;
  }
  ~Handle() { reset(); }
  hid_t get() const { return id_; }
  explicit operator bool() const { return id_ >= 0; }
  // Closes now, ignoring failure (destructors, error paths).
  void reset() {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = H5I_INVALID_HID;
  }
  // Closes now and returns the closer's status, for H5_CHECK: closing a file flushes
  // it, and that failure must not go unnoticed when the file is about to be renamed.
  herr_t close() {
    const hid_t id = id_;
    id_ = H5I_INVALID_HID;
    return id >= 0 && closer_ ? closer_(id) : 0;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

// Owners for the handle kinds; each throws SystemError when the id is invalid.
Handle own_file(hid_t id, const char* call, const char* file, int line);
Handle own_group(hid_t id, const char* call, const char* file, int line);
Handle own_dataset(hid_t id, const char* call, const char* file, int line);
Handle own_dataspace(hid_t id, const char* call, const char* file, int line);
Handle own_datatype(hid_t id, const char* call, const char* file, int line);
Handle own_plist(hid_t id, const char* call, const char* file, int line);
Handle own_attribute(hid_t id, const char* call, const char* file, int line);

// Shape of a dataset's dataspace (empty for a scalar).
std::vector<hsize_t> dims_of(hid_t dataset);
// Whether `parent` has a link called `name` (a path relative to it).
bool link_exists(hid_t parent, const char* name);

}  // namespace trainer::h5

#define H5_CHECK(call) ::trainer::h5::check((call), #call, __FILE__, __LINE__)
#define H5_OWN(kind, call) ::trainer::h5::own_##kind((call), #call, __FILE__, __LINE__)
