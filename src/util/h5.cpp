// HDF5 RAII handles and error reporting (see h5.hpp).
#include "util/h5.hpp"

namespace trainer::h5 {

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

void throw_error(const char* call, const char* file, int line) {
  throw Error(::trainer::detail::system_error_text("HDF5", call, last_error_message(), file, line));
}

namespace {
Handle own(hid_t id, Handle::Closer closer, const char* call, const char* file, int line) {
  check(id, call, file, line);
  return Handle(id, closer);
}
}  // namespace

Handle own_file(hid_t id, const char* call, const char* file, int line) { return own(id, H5Fclose, call, file, line); }
Handle own_group(hid_t id, const char* call, const char* file, int line) { return own(id, H5Gclose, call, file, line); }
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

bool link_exists(hid_t parent, const char* name) { return H5_CHECK(H5Lexists(parent, name, H5P_DEFAULT)) > 0; }

}  // namespace trainer::h5
