#pragma once
// Thin RAII layer over the HDF5 C API: one owner class for every kind of hid_t,
// an H5_CHECK macro that reports the call, file, line and HDF5's own message, and
// small typed helpers for the few shapes the dataset format needs.
//
// HDF5 here is a thread-safe build: every call takes the library's global lock, so
// callers keep their heavy work (decoding, resizing, augmentation) outside HDF5.
#include <hdf5.h>  // hid_t, herr_t, H5*

#include <cstdint>  // std::int64_t
#include <string>   // std::string
#include <vector>   // std::vector

#include "util/error.hpp"  // SystemError, detail::throw_system_error

namespace trainer::data::h5 {

// Stops HDF5 from printing its error stack on stderr for the calling thread (the
// automatic printing is per thread in thread-safe builds); we report errors ourselves.
void silence_errors_on_this_thread();

// The innermost message on the calling thread's HDF5 error stack ("" if empty).
std::string last_error_message();

template <typename T>
T check(T rc, const char* call, const char* file, int line) {
  if (rc < 0) ::trainer::detail::throw_system_error("HDF5", call, last_error_message(), file, line);
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
  void reset() {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

// Owners for the handle kinds; each throws SystemError when the id is invalid.
Handle own_file(hid_t id, const char* call, const char* file, int line);
Handle own_dataset(hid_t id, const char* call, const char* file, int line);
Handle own_dataspace(hid_t id, const char* call, const char* file, int line);
Handle own_datatype(hid_t id, const char* call, const char* file, int line);
Handle own_plist(hid_t id, const char* call, const char* file, int line);
Handle own_attribute(hid_t id, const char* call, const char* file, int line);

// Shape of a dataset's dataspace.
std::vector<hsize_t> dims_of(hid_t dataset);
bool link_exists(hid_t file, const char* name);

// A variable-length UTF-8 string type (what h5py writes for str).
Handle vlen_string_type();

// Writers used by the dataset writer (whole datasets at once).
void write_strings(hid_t file, const char* name, const std::vector<std::string>& values);
void write_string_attribute(hid_t object, const char* name, const std::string& value);
void write_int_attribute(hid_t object, const char* name, std::int64_t value);

// Readers: strings accept fixed- and variable-length storage; integers any integer type.
std::vector<std::string> read_strings(hid_t dataset);
std::vector<std::int64_t> read_int64(hid_t dataset);
bool read_int_attribute(hid_t object, const char* name, std::int64_t* value);
bool read_string_attribute(hid_t object, const char* name, std::string* value);

}  // namespace trainer::data::h5

#define H5_CHECK(call) ::trainer::data::h5::check((call), #call, __FILE__, __LINE__)
#define H5_OWN(kind, call) ::trainer::data::h5::own_##kind((call), #call, __FILE__, __LINE__)
