#pragma once
// Typed reads and writes of whole HDF5 datasets and attributes, on top of the
// handles in util/h5.hpp: the few shapes the dataset format and the checkpoints use.
// Failed HDF5 calls throw SystemError (H5_CHECK); data of the wrong kind for a
// reader is the caller's to report, so readers say so by throwing UserError with a
// bare reason (datasets) or by returning false (attributes).
#include <cstddef>  // std::size_t
#include <cstdint>  // std::int64_t
#include <string>   // std::string
#include <vector>   // std::vector

#include "util/h5.hpp"  // Handle, hid_t, hsize_t

namespace trainer::h5 {

// A variable-length UTF-8 string type (what h5py writes for str).
Handle vlen_string_type();

// ---- writing: each creates the dataset or attribute, which must not exist yet ----

// A float32 (or int64) dataset of shape `dims` (empty: a scalar) from row-major
// values. A name with '/' (e.g. "grad/backbone.conv1.weight") creates its groups.
void write_dataset(hid_t parent, const std::string& name, const std::vector<hsize_t>& dims, const float* values);
void write_dataset(hid_t parent, const std::string& name, const std::vector<hsize_t>& dims,
                   const std::int64_t* values);
// A one-dimensional dataset of variable-length UTF-8 strings.
void write_strings(hid_t parent, const char* name, const std::vector<std::string>& values);
// One string of any length as a scalar dataset of a fixed-length UTF-8 string type
// sized to it (an attribute would be limited to the 64 KiB of an object header).
void write_string_dataset(hid_t parent, const char* name, const std::string& value);

// Scalar attributes: int64, float64, and UTF-8 strings either variable-length
// (h5py's str) or fixed-length (sized to the value, at least one byte).
void write_int_attribute(hid_t object, const char* name, std::int64_t value);
void write_double_attribute(hid_t object, const char* name, double value);
void write_string_attribute(hid_t object, const char* name, const std::string& value);
void write_fixed_string_attribute(hid_t object, const char* name, const std::string& value);

// ---- reading ----

// The number of elements of a dataset that is about to be read whole, after checking
// that the file can really hold them: a damaged dataspace may claim 2^60 elements,
// and allocating room for them fails long before HDF5 would notice. Every element
// takes at least one stored byte, or 1/kMaxFilterRatio of one when filters compress
// it, and the stored bytes lie within the file. A UserError with a bare reason if not.
// element_bytes: what one element takes at least (a fixed-length string: its width).
inline constexpr hsize_t kMaxFilterRatio = 1032;  // deflate's best possible ratio
std::size_t stored_element_count(hid_t dataset, std::size_t element_bytes = 1);

// One-dimensional datasets: strings accept fixed- and variable-length storage
// (variable-length ones are read by util/h5_vlen_strings.hpp, never by HDF5),
// integers any integer type. Both check stored_element_count first.
std::vector<std::string> read_strings(hid_t dataset);
std::vector<std::int64_t> read_int64(hid_t dataset);
// A scalar string dataset (write_string_dataset's, or variable-length); its stored
// size is checked first. A UserError with a bare reason when it is something else.
std::string read_string_dataset(hid_t dataset);

// Scalar attributes; false (value untouched) when missing or of another class.
// Integers accept any integer type, doubles any integer or float type, strings
// fixed- and variable-length storage.
bool read_int_attribute(hid_t object, const char* name, std::int64_t* value);
bool read_double_attribute(hid_t object, const char* name, double* value);
bool read_string_attribute(hid_t object, const char* name, std::string* value);

}  // namespace trainer::h5
