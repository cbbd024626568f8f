// HDF5 RAII helpers and error reporting (see h5.hpp).
#include "data/h5.hpp"


namespace trainer::data::h5 {

void silence_errors_on_this_thread() {
  // Per thread and idempotent; cheap enough to call before every batch of HDF5 work.
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

namespace {
herr_t collect_message(unsigned n, const H5E_error2_t* err, void* data) {
  auto* out = static_cast<std::vector<std::string>*>(data);
  (void)n;
  if (err && err->desc) out->emplace_back(err->desc);
  return 0;
}
}  // namespace

std::string last_error_message() {
  std::vector<std::string> messages;  // outermost (API call) first
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_message, &messages);
  H5Eclear2(H5E_DEFAULT);
  if (messages.empty()) return "unknown HDF5 error";
  if (messages.size() == 1) return messages.front();
  return messages.front() + " (" + messages.back() + ")";
}

namespace {
Handle own(hid_t id, Handle::Closer closer, const char* call, const char* file, int line) {
  check(id, call, file, line);
  return Handle(id, closer);
}
}  // namespace

Handle own_file(hid_t id, const char* call, const char* file, int line) { return own(id, H5Fclose, call, file, line); }
Handle own_dataset(hid_t id, const char* call, const char* file, int line) { return own(id, H5Dclose, call, file, line); }
Handle own_dataspace(hid_t id, const char* call, const char* file, int line) { return own(id, H5Sclose, call, file, line); }
Handle own_datatype(hid_t id, const char* call, const char* file, int line) { return own(id, H5Tclose, call, file, line); }
Handle own_plist(hid_t id, const char* call, const char* file, int line) { return own(id, H5Pclose, call, file, line); }
Handle own_attribute(hid_t id, const char* call, const char* file, int line) { return own(id, H5Aclose, call, file, line); }

std::vector<hsize_t> dims_of(hid_t dataset) {
  Handle space = H5_OWN(dataspace, H5Dget_space(dataset));
  const int rank = H5_CHECK(H5Sget_simple_extent_ndims(space.get()));
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  if (rank > 0) H5_CHECK(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr));
  return dims;
}

bool link_exists(hid_t file, const char* name) { return H5_CHECK(H5Lexists(file, name, H5P_DEFAULT)) > 0; }

Handle vlen_string_type() {
  Handle type = H5_OWN(datatype, H5Tcopy(H5T_C_S1));
  H5_CHECK(H5Tset_size(type.get(), H5T_VARIABLE));
  H5_CHECK(H5Tset_cset(type.get(), H5T_CSET_UTF8));
  return type;
}

void write_strings(hid_t file, const char* name, const std::vector<std::string>& values) {
  Handle type = vlen_string_type();
  const hsize_t n = values.size();
  Handle space = H5_OWN(dataspace, H5Screate_simple(1, &n, nullptr));
  Handle set = H5_OWN(dataset, H5Dcreate2(file, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  std::vector<const char*> pointers;
  pointers.reserve(values.size());
  for (const auto& v : values) pointers.push_back(v.c_str());
  if (n > 0) H5_CHECK(H5Dwrite(set.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data()));
}

void write_string_attribute(hid_t object, const char* name, const std::string& value) {
  Handle type = vlen_string_type();
  Handle space = H5_OWN(dataspace, H5Screate(H5S_SCALAR));
  Handle attr = H5_OWN(attribute, H5Acreate2(object, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT));
  const char* pointer = value.c_str();
  H5_CHECK(H5Awrite(attr.get(), type.get(), &pointer));
}

void write_int_attribute(hid_t object, const char* name, std::int64_t value) {
  Handle space = H5_OWN(dataspace, H5Screate(H5S_SCALAR));
  Handle attr = H5_OWN(attribute, H5Acreate2(object, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT));
  H5_CHECK(H5Awrite(attr.get(), H5T_NATIVE_INT64, &value));
}

std::vector<std::string> read_strings(hid_t dataset) {
  Handle file_type = H5_OWN(datatype, H5Dget_type(dataset));
  if (H5Tget_class(file_type.get()) != H5T_STRING) throw UserError("is not a string dataset");
  const auto dims = dims_of(dataset);
  if (dims.size() != 1) throw UserError("must be one-dimensional, has rank " + std::to_string(dims.size()));
  const size_t n = dims[0];
  std::vector<std::string> out;
  out.reserve(n);
  if (n == 0) return out;
  const htri_t is_variable = H5_CHECK(H5Tis_variable_str(file_type.get()));
  if (is_variable > 0) {
    Handle mem_type = vlen_string_type();
    std::vector<char*> pointers(n, nullptr);
    H5_CHECK(H5Dread(dataset, mem_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data()));
    for (char* p : pointers) out.emplace_back(p ? p : "");
    Handle space = H5_OWN(dataspace, H5Dget_space(dataset));
    H5Dvlen_reclaim(mem_type.get(), space.get(), H5P_DEFAULT, pointers.data());
  } else {
    const size_t width = H5Tget_size(file_type.get());
    Handle mem_type = H5_OWN(datatype, H5Tcopy(H5T_C_S1));
    H5_CHECK(H5Tset_size(mem_type.get(), width));
    std::vector<char> buffer(n * width);
    H5_CHECK(H5Dread(dataset, mem_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()));
    for (size_t i = 0; i < n; ++i) {
      const char* s = buffer.data() + i * width;
      size_t len = 0;
      while (len < width && s[len] != '\0') ++len;
      out.emplace_back(s, len);
    }
  }
  return out;
}

std::vector<std::int64_t> read_int64(hid_t dataset) {
  Handle file_type = H5_OWN(datatype, H5Dget_type(dataset));
  if (H5Tget_class(file_type.get()) != H5T_INTEGER) throw UserError("is not an integer dataset");
  const auto dims = dims_of(dataset);
  if (dims.size() != 1) throw UserError("must be one-dimensional, has rank " + std::to_string(dims.size()));
  std::vector<std::int64_t> out(dims[0]);
  if (!out.empty()) H5_CHECK(H5Dread(dataset, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()));
  return out;
}

bool read_int_attribute(hid_t object, const char* name, std::int64_t* value) {
  if (H5_CHECK(H5Aexists(object, name)) <= 0) return false;
  Handle attr = H5_OWN(attribute, H5Aopen(object, name, H5P_DEFAULT));
  Handle type = H5_OWN(datatype, H5Aget_type(attr.get()));
  if (H5Tget_class(type.get()) != H5T_INTEGER) return false;
  H5_CHECK(H5Aread(attr.get(), H5T_NATIVE_INT64, value));
  return true;
}

bool read_string_attribute(hid_t object, const char* name, std::string* value) {
  if (H5_CHECK(H5Aexists(object, name)) <= 0) return false;
  Handle attr = H5_OWN(attribute, H5Aopen(object, name, H5P_DEFAULT));
  Handle type = H5_OWN(datatype, H5Aget_type(attr.get()));
  if (H5Tget_class(type.get()) != H5T_STRING) return false;
  if (H5_CHECK(H5Tis_variable_str(type.get())) > 0) {
    Handle mem_type = vlen_string_type();
    char* p = nullptr;
    H5_CHECK(H5Aread(attr.get(), mem_type.get(), &p));
    *value = p ? p : "";
    H5free_memory(p);  // allocated by HDF5 for the variable-length string
  } else {
    const size_t width = H5Tget_size(type.get());
    std::vector<char> buffer(width + 1, '\0');
    Handle mem_type = H5_OWN(datatype, H5Tcopy(H5T_C_S1));
    H5_CHECK(H5Tset_size(mem_type.get(), width));
    H5_CHECK(H5Aread(attr.get(), mem_type.get(), buffer.data()));
    *value = std::string(buffer.data());
  }
  return true;
}

}  // namespace trainer::data::h5
