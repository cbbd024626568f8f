// Typed HDF5 dataset and attribute reads and writes (see h5_io.hpp).
#include "util/h5_io.hpp"

#include <initializer_list>  // std::initializer_list

#include "util/error.hpp"  // UserError
#include "util/h5_vlen_strings.hpp"  // read_vlen_strings

namespace trainer::h5 {

Handle vlen_string_type() {
  Handle type = H5_OWN(datatype, H5Tcopy(H5T_C_S1));
  H5_CHECK(H5Tset_size(type.get(), H5T_VARIABLE));
  H5_CHECK(H5Tset_cset(type.get(), H5T_CSET_UTF8));
  return type;
}

namespace {

void write_whole_dataset(hid_t parent, const std::string& name, const std::vector<hsize_t>& dims, hid_t file_type,
                         hid_t memory_type, const void* values) {
  Handle space = dims.empty() ? H5_OWN(dataspace, H5Screate(H5S_SCALAR))
                              : H5_OWN(dataspace, H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
  Handle link_plist = H5_OWN(plist, H5Pcreate(H5P_LINK_CREATE));
  H5_CHECK(H5Pset_create_intermediate_group(link_plist.get(), 1));
  Handle set = H5_OWN(dataset, H5Dcreate2(parent, name.c_str(), file_type, space.get(), link_plist.get(),
                                          H5P_DEFAULT, H5P_DEFAULT));
  H5_CHECK(H5Dwrite(set.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values));
}

// Creates a scalar attribute stored as `file_type` and writes the one value at `value`.
void write_scalar_attribute(hid_t object, const char* name, hid_t file_type, hid_t memory_type, const void* value) {
  Handle space = H5_OWN(dataspace, H5Screate(H5S_SCALAR));
  Handle attr = H5_OWN(attribute, H5Acreate2(object, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT));
  H5_CHECK(H5Awrite(attr.get(), memory_type, value));
}

// The attribute if it exists and its type is of one of the classes; else an empty handle.
Handle open_attribute_of_class(hid_t object, const char* name, std::initializer_list<H5T_class_t> classes,
                               Handle* type) {
  if (H5_CHECK(H5Aexists(object, name)) <= 0) return {};
  Handle attr = H5_OWN(attribute, H5Aopen(object, name, H5P_DEFAULT));
  *type = H5_OWN(datatype, H5Aget_type(attr.get()));
  const H5T_class_t found = H5_CHECK(H5Tget_class(type->get()));
  for (H5T_class_t c : classes)
    if (c == found) return attr;
  return {};
}

// The memory type for reading fixed-length strings stored as `file_type`: one byte
// wider and NUL-terminated, so a string that fills its whole stored width (h5py's
// bytes, or write_fixed_string_attribute) keeps its last character; same character
// set, since HDF5 does not convert between ASCII and UTF-8.
Handle fixed_string_memory_type(hid_t file_type) {
  Handle type = H5_OWN(datatype, H5Tcopy(H5T_C_S1));
  H5_CHECK(H5Tset_size(type.get(), H5Tget_size(file_type) + 1));
  H5_CHECK(H5Tset_strpad(type.get(), H5T_STR_NULLTERM));
  H5_CHECK(H5Tset_cset(type.get(), H5_CHECK(H5Tget_cset(file_type))));
  return type;
}

// Checks that a dataset holds one-dimensional data of the class; returns its length.
// Each element takes at least one stored byte, a fixed-length string its whole width.
size_t one_dimensional_length(hid_t dataset, hid_t file_type, H5T_class_t expected, const char* what) {
  if (H5Tget_class(file_type) != expected) throw UserError(std::string("is not ") + what + " dataset");
  const auto dims = dims_of(dataset);
  if (dims.size() != 1) throw UserError("must be one-dimensional, has rank " + std::to_string(dims.size()));
  const bool fixed_string = expected == H5T_STRING && H5_CHECK(H5Tis_variable_str(file_type)) == 0;
  return stored_element_count(dataset, fixed_string ? H5Tget_size(file_type) : 1);
}

}  // namespace

std::size_t stored_element_count(hid_t dataset, std::size_t element_bytes) {
  std::size_t count = 1;
  for (const hsize_t d : dims_of(dataset)) {
    if (__builtin_mul_overflow(count, d, &count))
      throw UserError("claims more elements than fit in memory (truncated or damaged?)");
  }
  if (count == 0) return 0;
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(count, element_bytes, &bytes))
    throw UserError("claims more bytes than fit in memory (truncated or damaged?)");
  // H5Dget_storage_size says what the layout claims (0 when nothing is allocated);
  // the file's size is what is really there.
  hsize_t stored = H5Dget_storage_size(dataset);
  Handle file = H5_OWN(file, H5Iget_file_id(dataset));
  hsize_t file_size = 0;
  H5_CHECK(H5Fget_filesize(file.get(), &file_size));
  if (stored > file_size) stored = file_size;
  Handle plist = H5_OWN(plist, H5Dget_create_plist(dataset));
  const hsize_t ratio = H5_CHECK(H5Pget_nfilters(plist.get())) > 0 ? kMaxFilterRatio : 1;
  if (bytes / ratio > stored)
    throw UserError("claims " + std::to_string(count) + " elements of " + std::to_string(element_bytes) +
                    " bytes but the file stores only " + std::to_string(stored) +
                    " bytes for it (truncated or damaged?)");
  return count;
}

void write_dataset(hid_t parent, const std::string& name, const std::vector<hsize_t>& dims, const float* values) {
  write_whole_dataset(parent, name, dims, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, values);
}

void write_dataset(hid_t parent, const std::string& name, const std::vector<hsize_t>& dims,
                   const std::int64_t* values) {
  write_whole_dataset(parent, name, dims, H5T_STD_I64LE, H5T_NATIVE_INT64, values);
}

void write_strings(hid_t parent, const char* name, const std::vector<std::string>& values) {
  Handle type = vlen_string_type();
  const hsize_t n = values.size();
  Handle space = H5_OWN(dataspace, H5Screate_simple(1, &n, nullptr));
  Handle set = H5_OWN(dataset, H5Dcreate2(parent, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  std::vector<const char*> pointers;
  pointers.reserve(values.size());
  for (const auto& v : values) pointers.push_back(v.c_str());
  if (n > 0) H5_CHECK(H5Dwrite(set.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data()));
}

void write_string_dataset(hid_t parent, const char* name, const std::string& value) {
  // HDF5 has no zero-size string type: "" is stored as one NUL byte.
  Handle type = H5_OWN(datatype, H5Tcopy(H5T_C_S1));
  H5_CHECK(H5Tset_size(type.get(), value.empty() ? 1 : value.size()));
  H5_CHECK(H5Tset_cset(type.get(), H5T_CSET_UTF8));
  Handle space = H5_OWN(dataspace, H5Screate(H5S_SCALAR));
  Handle set = H5_OWN(dataset, H5Dcreate2(parent, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5_CHECK(H5Dwrite(set.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, value.empty() ? "" : value.data()));
}

void write_int_attribute(hid_t object, const char* name, std::int64_t value) {
  write_scalar_attribute(object, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}

void write_double_attribute(hid_t object, const char* name, double value) {
  write_scalar_attribute(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

void write_string_attribute(hid_t object, const char* name, const std::string& value) {
  Handle type = vlen_string_type();
  const char* pointer = value.c_str();
  write_scalar_attribute(object, name, type.get(), type.get(), &pointer);
}

void write_fixed_string_attribute(hid_t object, const char* name, const std::string& value) {
  // HDF5 has no zero-size string type: "" is stored as one NUL byte.
  Handle type = H5_OWN(datatype, H5Tcopy(H5T_C_S1));
  H5_CHECK(H5Tset_size(type.get(), value.empty() ? 1 : value.size()));
  H5_CHECK(H5Tset_cset(type.get(), H5T_CSET_UTF8));
  write_scalar_attribute(object, name, type.get(), type.get(), value.c_str());
}

std::vector<std::string> read_strings(hid_t dataset) {
  Handle file_type = H5_OWN(datatype, H5Dget_type(dataset));
  const size_t n = one_dimensional_length(dataset, file_type.get(), H5T_STRING, "a string");
  std::vector<std::string> out;
  out.reserve(n);
  if (n == 0) return out;
  const htri_t is_variable = H5_CHECK(H5Tis_variable_str(file_type.get()));
  // Not through H5Dread: HDF5 follows the stored heap references unchecked.
  if (is_variable > 0) return read_vlen_strings(dataset, n);
  Handle mem_type = fixed_string_memory_type(file_type.get());
  const size_t width = H5Tget_size(mem_type.get());
  std::vector<char> buffer(n * width);
  H5_CHECK(H5Dread(dataset, mem_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()));
  for (size_t i = 0; i < n; ++i) out.emplace_back(buffer.data() + i * width);  // NUL-terminated
  return out;
}

std::vector<std::int64_t> read_int64(hid_t dataset) {
  Handle file_type = H5_OWN(datatype, H5Dget_type(dataset));
  std::vector<std::int64_t> out(one_dimensional_length(dataset, file_type.get(), H5T_INTEGER, "an integer"));
  if (!out.empty()) H5_CHECK(H5Dread(dataset, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()));
  return out;
}

std::string read_string_dataset(hid_t dataset) {
  Handle file_type = H5_OWN(datatype, H5Dget_type(dataset));
  if (H5Tget_class(file_type.get()) != H5T_STRING) throw UserError("is not a string dataset");
  if (!dims_of(dataset).empty()) throw UserError("is not a single string");
  if (H5_CHECK(H5Tis_variable_str(file_type.get())) > 0) return read_vlen_strings(dataset, 1).front();
  stored_element_count(dataset, H5Tget_size(file_type.get()));
  Handle mem_type = fixed_string_memory_type(file_type.get());
  std::vector<char> buffer(H5Tget_size(mem_type.get()), '\0');
  H5_CHECK(H5Dread(dataset, mem_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()));
  return std::string(buffer.data());
}

bool read_int_attribute(hid_t object, const char* name, std::int64_t* value) {
  Handle type;
  Handle attr = open_attribute_of_class(object, name, {H5T_INTEGER}, &type);
  if (!attr) return false;
  H5_CHECK(H5Aread(attr.get(), H5T_NATIVE_INT64, value));
  return true;
}

bool read_double_attribute(hid_t object, const char* name, double* value) {
  Handle type;
  Handle attr = open_attribute_of_class(object, name, {H5T_INTEGER, H5T_FLOAT}, &type);
  if (!attr) return false;
  H5_CHECK(H5Aread(attr.get(), H5T_NATIVE_DOUBLE, value));
  return true;
}

bool read_string_attribute(hid_t object, const char* name, std::string* value) {
  Handle type;
  Handle attr = open_attribute_of_class(object, name, {H5T_STRING}, &type);
  if (!attr) return false;
  if (H5_CHECK(H5Tis_variable_str(type.get())) > 0) {
    Handle mem_type = vlen_string_type();
    char* p = nullptr;
    H5_CHECK(H5Aread(attr.get(), mem_type.get(), &p));
    *value = p ? p : "";
    H5free_memory(p);  // allocated by HDF5 for the variable-length string
  } else {
    Handle mem_type = fixed_string_memory_type(type.get());
    std::vector<char> buffer(H5Tget_size(mem_type.get()), '\0');
    H5_CHECK(H5Aread(attr.get(), mem_type.get(), buffer.data()));
    *value = std::string(buffer.data());
  }
  return true;
}

}  // namespace trainer::h5
