// Walking an HDF5 file the way the trainer reads it (see h5_walk.hpp).
#include "util/h5_walk.hpp"

#include <sys/stat.h>  // stat

#include <exception>  // std::exception_ptr
#include <vector>     // std::vector

#include "util/error.hpp"  // SystemError
#include "util/h5.hpp"     // Handle, last_error_message, silence_errors_on_this_thread

namespace trainer::h5 {

namespace {

// Bounds that keep a legitimate file's walk short; a file past them is walked in part
// (its deeper groups, further objects or chunks are not visited), never refused.
constexpr int kMaxDepth = 32;                    // a hard-link cycle would recurse forever
constexpr std::size_t kMaxObjects = 100000;
constexpr std::uint64_t kMaxChunks = std::uint64_t{1} << 20;
// A name looked up and not found: the path of H5Aexists / H5Lexists on optional names
// ("format_version"), which is not the path of iterating over the names that exist.
constexpr char kMissingName[] = "trainer-walk: a name no file holds";

struct Walk {
  hid_t file = H5I_INVALID_HID;
  std::uint64_t file_size = 0;
  std::size_t objects = 0;
};

[[noreturn]] void fail(const std::string& where, const std::string& what) { throw SystemError(where + ": " + what); }

// HDF5's own message when `rc` says a call on `where` failed.
template <typename T>
T ok(T rc, const std::string& where) {
  if (rc < 0) fail(where, last_error_message());
  return rc;
}
Handle owned(hid_t id, Handle::Closer closer, const std::string& where) { return Handle(ok(id, where), closer); }

// The memory type the values are read as: the native form of the stored type, as the
// trainer's readers convert them. Nothing (an empty handle) for the classes no reader
// of the trainer converts (references, time): their bytes are not read.
Handle memory_type(hid_t type, const std::string& where) {
  const H5T_class_t cls = ok(H5Tget_class(type), where);
  if (cls == H5T_REFERENCE || cls == H5T_TIME) return {};
  return owned(H5Tget_native_type(type, H5T_DIR_ASCEND), H5Tclose, where);
}

// Bytes for `count` values of `mem`, or 0 when that is more than kWalkReadBytes.
std::size_t buffer_bytes(hid_t mem, hsize_t count) {
  const std::size_t size = H5Tget_size(mem);
  if (size == 0 || count > kWalkReadBytes / size) return 0;
  return static_cast<std::size_t>(count) * size;
}

// After a read: variable-length values (strings among them) point into memory HDF5
// allocated from the global heap's objects; freeing them walks those pointers again.
void reclaim(hid_t mem, hid_t space, std::vector<unsigned char>& buffer, const std::string& where) {
  if (H5Tdetect_class(mem, H5T_VLEN) > 0 || H5Tis_variable_str(mem) > 0 || H5Tdetect_class(mem, H5T_STRING) > 0)
    ok(H5Dvlen_reclaim(mem, space, H5P_DEFAULT, buffer.data()), where);
}

void walk_attribute(hid_t object, const char* name, const std::string& where) {
  const Handle attribute = owned(H5Aopen(object, name, H5P_DEFAULT), H5Aclose, where);
  const Handle type = owned(H5Aget_type(attribute.get()), H5Tclose, where);
  const Handle space = owned(H5Aget_space(attribute.get()), H5Sclose, where);
  const hssize_t count = ok(H5Sget_simple_extent_npoints(space.get()), where);
  const Handle mem = memory_type(type.get(), where);
  if (!mem || count <= 0) return;
  std::vector<unsigned char> buffer(buffer_bytes(mem.get(), static_cast<hsize_t>(count)));
  if (buffer.empty()) return;  // larger than any attribute the trainer reads
  ok(H5Aread(attribute.get(), mem.get(), buffer.data()), where);
  reclaim(mem.get(), space.get(), buffer, where);
}

// Every attribute, read; C callbacks must not throw, so the first failure is kept.
void walk_attributes(hid_t object, const std::string& where) {
  ok(H5Aexists(object, kMissingName), where + ": looking up an attribute");
  struct State {
    std::string where;
    std::exception_ptr error;
  } state{where, nullptr};
  const auto each = [](hid_t loc, const char* name, const H5A_info_t*, void* data) -> herr_t {
    auto* s = static_cast<State*>(data);
    try {
      walk_attribute(loc, name, s->where + ", attribute '" + name + "'");
      return 0;
    } catch (...) {
      s->error = std::current_exception();
      return -1;
    }
  };
  const herr_t rc = H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_NATIVE, nullptr, each, &state);
  if (state.error) std::rethrow_exception(state.error);
  ok(rc, where + ": its attributes");
}

// The stored bytes at [address, address + size) must lie inside the file.
void check_extent(const Walk& walk, haddr_t address, hsize_t size, const std::string& where, const std::string& what) {
  if (address == HADDR_UNDEF) return;  // not written (fill values)
  if (address > walk.file_size || size > walk.file_size - address)
    fail(where, what + " of " + std::to_string(size) + " bytes at byte " + std::to_string(address) +
                    " lies past the end of the file (" + std::to_string(walk.file_size) + " bytes)");
}

// Every chunk of the chunk index (a B-tree or, in newer files, another index), looked
// up by its position as a reader of that part of the dataset looks it up.
void walk_chunks(const Walk& walk, hid_t dataset, hid_t plist, const std::vector<hsize_t>& dims,
                 const std::string& where) {
  const int rank = static_cast<int>(dims.size());
  std::vector<hsize_t> chunk(dims.size());
  if (ok(H5Pget_chunk(plist, rank, chunk.data()), where) != rank) fail(where, "its chunks have another rank than it");
  std::vector<hsize_t> grid(dims.size());
  std::uint64_t total = 1;
  for (int i = 0; i < rank; ++i) {
    if (chunk[i] == 0) fail(where, "a chunk dimension is 0");
    grid[i] = (dims[i] + chunk[i] - 1) / chunk[i];
    if (grid[i] == 0) return;  // an empty dataset has no chunks
    total = grid[i] > kMaxChunks / total ? kMaxChunks : total * grid[i];
  }
  std::vector<hsize_t> at(dims.size(), 0), offset(dims.size());
  for (std::uint64_t n = 0; n < total; ++n) {
    for (int i = 0; i < rank; ++i) offset[i] = at[i] * chunk[i];
    unsigned mask = 0;
    haddr_t address = HADDR_UNDEF;
    hsize_t size = 0;
    ok(H5Dget_chunk_info_by_coord(dataset, offset.data(), &mask, &address, &size),
       where + ": chunk " + std::to_string(n));
    check_extent(walk, address, size, where, "chunk " + std::to_string(n));
    for (int i = rank - 1; i >= 0 && ++at[i] == grid[i]; --i) at[i] = 0;  // the next position, last axis fastest
  }
}

// The values: all of them when they fit kWalkReadBytes, else the first row (one frame).
void read_dataset_values(hid_t dataset, hid_t type, const std::vector<hsize_t>& dims, const std::string& where) {
  const Handle mem = memory_type(type, where);
  if (!mem) return;
  hsize_t count = 1;
  for (hsize_t d : dims) count = d != 0 && count > kWalkReadBytes / d ? kWalkReadBytes + 1 : count * d;
  if (count == 0) return;
  const Handle file_space = owned(H5Dget_space(dataset), H5Sclose, where);
  std::vector<hsize_t> rows(dims);
  if (buffer_bytes(mem.get(), count) == 0) {
    // Too large to read whole: the first row, or a single value if even a row is.
    count = 1;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      rows[i] = i == 0 ? 1 : dims[i];
      count *= rows[i];
    }
    if (buffer_bytes(mem.get(), count) == 0) {
      for (hsize_t& r : rows) r = 1;
      count = 1;
    }
    const std::vector<hsize_t> start(dims.size(), 0);
    ok(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, rows.data(), nullptr), where);
  }
  const Handle mem_space = rows.empty() ? owned(H5Screate(H5S_SCALAR), H5Sclose, where)
                                        : owned(H5Screate_simple(static_cast<int>(rows.size()), rows.data(), nullptr),
                                                H5Sclose, where);
  std::vector<unsigned char> buffer(buffer_bytes(mem.get(), count));
  ok(H5Dread(dataset, mem.get(), mem_space.get(), file_space.get(), H5P_DEFAULT, buffer.data()), where + ": reading it");
  reclaim(mem.get(), mem_space.get(), buffer, where);
}

void walk_dataset(const Walk& walk, hid_t dataset, const std::string& where) {
  const Handle type = owned(H5Dget_type(dataset), H5Tclose, where);
  const Handle space = owned(H5Dget_space(dataset), H5Sclose, where);
  const int rank = ok(H5Sget_simple_extent_ndims(space.get()), where);
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0) ok(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr), where);
  const Handle plist = owned(H5Dget_create_plist(dataset), H5Pclose, where);
  const int filters = ok(H5Pget_nfilters(plist.get()), where);
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0, config = 0;
    std::size_t values = 0;
    char name[64];
    ok(H5Pget_filter2(plist.get(), static_cast<unsigned>(i), &flags, &values, nullptr, sizeof name, name, &config),
       where + ": filter " + std::to_string(i));
  }
  const H5D_layout_t layout = H5Pget_layout(plist.get());
  if (layout == H5D_CHUNKED) {
    walk_chunks(walk, dataset, plist.get(), dims, where);
  } else if (layout == H5D_CONTIGUOUS) {
    check_extent(walk, H5Dget_offset(dataset), H5Dget_storage_size(dataset), where, "its data");
  } else if (layout < 0) {
    fail(where, "its layout: " + last_error_message());
  }
  read_dataset_values(dataset, type.get(), dims, where);
}

void walk_object(Walk& walk, hid_t parent, const std::string& name, const std::string& path, int depth);

// The group's links in name order (the group's B-tree or link messages and its local
// heap of names), each hard link's object walked; soft and external links are names
// only, and the objects they name are walked where they live.
void walk_group(Walk& walk, hid_t group, const std::string& path, int depth) {
  H5G_info_t info{};
  ok(H5Gget_info(group, &info), path);
  ok(H5Lexists(group, kMissingName, H5P_DEFAULT), path + ": looking up a name");
  if (depth >= kMaxDepth) return;
  struct State {
    Walk* walk;
    std::string path;
    int depth;
    std::exception_ptr error;
  } state{&walk, path, depth, nullptr};
  const auto each = [](hid_t g, const char* name, const H5L_info_t* link, void* data) -> herr_t {
    auto* s = static_cast<State*>(data);
    if (link->type != H5L_TYPE_HARD) return 0;
    if (++s->walk->objects > kMaxObjects) return 1;  // enough: stop early, successfully
    try {
      walk_object(*s->walk, g, name, (s->path == "/" ? "/" : s->path + "/") + name, s->depth + 1);
      return 0;
    } catch (...) {
      s->error = std::current_exception();
      return -1;
    }
  };
  hsize_t index = 0;
  const herr_t rc = H5Literate(group, H5_INDEX_NAME, H5_ITER_NATIVE, &index, each, &state);
  if (state.error) std::rethrow_exception(state.error);
  ok(rc, path + ": its links");
}

void walk_object(Walk& walk, hid_t parent, const std::string& name, const std::string& path, int depth) {
  const Handle object = owned(H5Oopen(parent, name.c_str(), H5P_DEFAULT), H5Oclose, path);
  walk_attributes(object.get(), path);
  switch (H5Iget_type(object.get())) {
    case H5I_GROUP: walk_group(walk, object.get(), path, depth); break;
    case H5I_DATASET: walk_dataset(walk, object.get(), "dataset " + path); break;
    default: break;  // a named datatype: its object header is all there is
  }
}

}  // namespace

void walk_file(const std::string& path) {
  silence_errors_on_this_thread();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail(path, "cannot read its size");
  const Handle file = owned(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose, "opening it");
  Walk walk;
  walk.file = file.get();
  walk.file_size = static_cast<std::uint64_t>(st.st_size);
  walk_object(walk, file.get(), "/", "/", 0);
}

}  // namespace trainer::h5
