// Variable-length strings read from the file's bytes, every reference checked (see
// h5_vlen_strings.hpp). The on-disk layouts are those of the HDF5 file format
// specification: a reference is a 4-byte sequence length, an address of the file's
// "size of offsets" and a 4-byte object index, all little-endian; a global heap
// collection is "GCOL", version 1, 3 reserved bytes and its size ("size of
// lengths"), then objects of a 2-byte index, 2-byte reference count, 4 reserved
// bytes, a size ("size of lengths") and the data padded to a multiple of 8. Index 0
// is the free space, whose size counts its own header.
#include "util/h5_vlen_strings.hpp"

#include <fcntl.h>     // open, O_RDONLY, O_CLOEXEC
#include <sys/stat.h>  // fstat, S_ISREG
#include <unistd.h>    // pread, close

#include <zlib.h>  // uncompress (deflate-filtered chunks)

#include <cstdint>        // std::uint8_t, std::uint64_t
#include <cstring>        // std::memchr
#include <map>            // std::map
#include <unordered_map>  // std::unordered_map

#include "util/error.hpp"  // UserError

namespace trainer::h5 {

namespace {

const char* const kDamaged = " (truncated or damaged?)";

[[noreturn]] void damaged(const std::string& what) { throw UserError(what + kDamaged); }

std::uint64_t little_endian(const std::uint8_t* p, std::size_t bytes) {
  std::uint64_t v = 0;
  for (std::size_t i = bytes; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

// The file the dataset lives in, opened a second time for plain reads.
class RawFile {
 public:
  explicit RawFile(hid_t dataset) {
    Handle file = H5_OWN(file, H5Iget_file_id(dataset));
    const ssize_t length = H5_CHECK(H5Fget_name(file.get(), nullptr, 0));
    std::string name(static_cast<std::size_t>(length) + 1, '\0');
    H5_CHECK(H5Fget_name(file.get(), name.data(), name.size()));
    name.resize(static_cast<std::size_t>(length));
    Handle create = H5_OWN(plist, H5Fget_create_plist(file.get()));
    std::size_t size_of_offsets = 0, size_of_lengths = 0;
    H5_CHECK(H5Pget_sizes(create.get(), &size_of_offsets, &size_of_lengths));
    hsize_t userblock = 0;
    H5_CHECK(H5Pget_userblock(create.get(), &userblock));
    if (size_of_offsets < 2 || size_of_offsets > 8 || size_of_lengths < 2 || size_of_lengths > 8)
      damaged("the file's address sizes (" + std::to_string(size_of_offsets) + ", " +
              std::to_string(size_of_lengths) + " bytes) are not what HDF5 writes");
    offsets_ = size_of_offsets;
    lengths_ = size_of_lengths;
    base_ = userblock;
    fd_ = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd_ < 0 || ::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode))
      throw UserError("cannot reopen the file to read its strings");
    size_ = static_cast<std::uint64_t>(st.st_size);
  }
  ~RawFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawFile(const RawFile&) = delete;
  RawFile& operator=(const RawFile&) = delete;

  std::size_t size_of_offsets() const { return offsets_; }
  std::size_t size_of_lengths() const { return lengths_; }
  std::uint64_t size() const { return size_; }

  // `bytes` bytes at absolute offset `at`, which must lie within the file.
  std::vector<std::uint8_t> read(std::uint64_t at, std::uint64_t bytes, const std::string& what) const {
    if (at > size_ || bytes > size_ - at)
      damaged(what + " of " + std::to_string(bytes) + " bytes at offset " + std::to_string(at) +
              " lies beyond the end of the file (" + std::to_string(size_) + " bytes)");
    std::vector<std::uint8_t> out(static_cast<std::size_t>(bytes));
    std::size_t done = 0;
    while (done < out.size()) {
      const ssize_t got = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(at + done));
      if (got <= 0) damaged("cannot read " + what + " at offset " + std::to_string(at));
      done += static_cast<std::size_t>(got);
    }
    return out;
  }
  // A relative file address (what the file stores) as an absolute offset.
  std::uint64_t absolute(std::uint64_t address) const {
    if (address > size_) return size_ + 1;  // past the end: read() refuses it
    return address + base_;
  }

 private:
  int fd_ = -1;
  std::size_t offsets_ = 8, lengths_ = 8;
  std::uint64_t base_ = 0, size_ = 0;
};

// One global heap collection: where each object's data starts and how long it is.
struct Collection {
  std::vector<std::uint8_t> bytes;
  std::unordered_map<std::uint32_t, std::pair<std::size_t, std::uint64_t>> objects;  // index -> (offset, size)
};

Collection read_collection(const RawFile& file, std::uint64_t address) {
  const std::string where = "global heap collection at address " + std::to_string(address);
  const std::size_t header = 8 + file.size_of_lengths();
  const std::vector<std::uint8_t> head = file.read(file.absolute(address), header, where);
  if (head[0] != 'G' || head[1] != 'C' || head[2] != 'O' || head[3] != 'L')
    damaged(where + " has no GCOL signature");
  if (head[4] != 1) damaged(where + " has version " + std::to_string(head[4]) + ", not 1");
  const std::uint64_t size = little_endian(head.data() + 8, file.size_of_lengths());
  if (size < header) damaged(where + " claims a size of " + std::to_string(size) + " bytes");
  Collection c;
  c.bytes = file.read(file.absolute(address), size, where);
  // Walk the objects as HDF5 does, but refuse what would make it misbehave: an
  // object running past the end, a free space that does not advance, an index twice.
  const std::size_t object_header = 8 + file.size_of_lengths();
  std::size_t p = header;
  while (p < c.bytes.size()) {
    const std::size_t left = c.bytes.size() - p;
    if (left < object_header) break;  // too small for an object: free space
    const std::uint32_t index = static_cast<std::uint32_t>(little_endian(&c.bytes[p], 2));
    const std::uint64_t object_size = little_endian(&c.bytes[p + 8], file.size_of_lengths());
    std::uint64_t need = object_size;
    if (index > 0) {
      if (object_size > left - object_header) damaged(where + ": object " + std::to_string(index) + " runs past its end");
      need = object_header + ((object_size + 7) & ~std::uint64_t{7});
      if (!c.objects.emplace(index, std::make_pair(p + object_header, object_size)).second)
        damaged(where + " holds object " + std::to_string(index) + " twice");
    } else if (need < object_header || need > left) {
      damaged(where + ": its free space of " + std::to_string(need) + " bytes does not fit");
    }
    p += need > left ? left : static_cast<std::size_t>(need);
  }
  return c;
}

std::vector<std::uint8_t> contiguous_references(hid_t dataset, const RawFile& file, std::size_t count,
                                                std::size_t width) {
  const haddr_t offset = H5Dget_offset(dataset);  // absolute; undefined until written
  if (offset == HADDR_UNDEF) return std::vector<std::uint8_t>(count * width, 0);
  return file.read(offset, static_cast<std::uint64_t>(count) * width, "its references");
}

// Undoes HDF5's shuffle filter: byte j of every element was stored together.
std::vector<std::uint8_t> unshuffle(const std::vector<std::uint8_t>& in, std::size_t width) {
  std::vector<std::uint8_t> out(in.size());
  const std::size_t elements = in.size() / width;
  for (std::size_t j = 0; j < width; ++j)
    for (std::size_t i = 0; i < elements; ++i) out[i * width + j] = in[j * elements + i];
  for (std::size_t k = elements * width; k < in.size(); ++k) out[k] = in[k];  // leftover bytes stay as they are
  return out;
}

std::vector<std::uint8_t> chunked_references(hid_t dataset, const RawFile& file, std::size_t count,
                                             std::size_t width) {
  Handle plist = H5_OWN(plist, H5Dget_create_plist(dataset));
  hsize_t chunk = 0;
  if (H5Pget_chunk(plist.get(), 1, &chunk) != 1 || chunk == 0) damaged("its chunk shape is not one-dimensional");
  const int nfilters = H5_CHECK(H5Pget_nfilters(plist.get()));
  std::vector<H5Z_filter_t> filters;
  for (int i = 0; i < nfilters; ++i) {
    unsigned flags = 0, config = 0;
    std::size_t nvalues = 0;
    const H5Z_filter_t f = H5Pget_filter2(plist.get(), static_cast<unsigned>(i), &flags, &nvalues, nullptr, 0,
                                          nullptr, &config);
    if (f != H5Z_FILTER_DEFLATE && f != H5Z_FILTER_SHUFFLE)
      throw UserError("stores its strings with HDF5 filter " + std::to_string(f) +
                          ", which the trainer does not read (only deflate and shuffle)",
                      "rewrite the dataset without that filter, or with fixed-length strings");
    filters.push_back(f);
  }
  const std::uint64_t chunk_bytes = chunk * width;
  if (chunk_bytes / width != chunk || chunk_bytes > file.size() * 1032 + 1)  // deflate's best ratio
    damaged("its chunks of " + std::to_string(chunk) + " strings cannot be in a file of " +
            std::to_string(file.size()) + " bytes");
  std::vector<std::uint8_t> out(count * width, 0);
  for (std::uint64_t first = 0; first < count; first += chunk) {
    hsize_t start = first, stored = 0;
    if (H5Dget_chunk_storage_size(dataset, &start, &stored) < 0) {
      H5Eclear2(H5E_DEFAULT);
      stored = 0;
    }
    if (stored == 0) continue;  // never written: nil references
    if (stored > file.size()) damaged("a chunk claims " + std::to_string(stored) + " bytes");
    std::vector<std::uint8_t> data(static_cast<std::size_t>(stored));
    std::uint32_t skipped = 0;
    H5_CHECK(H5Dread_chunk(dataset, H5P_DEFAULT, &start, &skipped, data.data()));
    for (int i = nfilters - 1; i >= 0; --i) {  // the pipeline backwards
      if (skipped & (1u << i)) continue;
      if (filters[static_cast<std::size_t>(i)] == H5Z_FILTER_DEFLATE) {
        std::vector<std::uint8_t> plain(static_cast<std::size_t>(chunk_bytes));
        uLongf length = static_cast<uLongf>(plain.size());
        if (::uncompress(plain.data(), &length, data.data(), static_cast<uLong>(data.size())) != Z_OK)
          damaged("a compressed chunk of its references does not inflate");
        plain.resize(length);
        data.swap(plain);
      } else {
        data = unshuffle(data, width);
      }
    }
    if (data.size() != chunk_bytes)
      damaged("a chunk of its references holds " + std::to_string(data.size()) + " bytes, not " +
              std::to_string(chunk_bytes));
    const std::uint64_t n = std::min<std::uint64_t>(chunk, count - first);
    std::copy(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(n * width),
              out.begin() + static_cast<std::ptrdiff_t>(first * width));
  }
  return out;
}

// The dataset's references, `count` of `width` bytes each, as stored in the file
// (elements whose storage was never allocated are zero: the nil reference).
std::vector<std::uint8_t> read_references(hid_t dataset, const RawFile& file, std::size_t count, std::size_t width) {
  Handle plist = H5_OWN(plist, H5Dget_create_plist(dataset));
  switch (H5Pget_layout(plist.get())) {
    case H5D_CONTIGUOUS: return contiguous_references(dataset, file, count, width);
    case H5D_CHUNKED: return chunked_references(dataset, file, count, width);
    default:
      throw UserError("stores its variable-length strings in a layout the trainer does not read (compact?)",
                      "rewrite the dataset with contiguous or chunked storage, or with fixed-length strings");
  }
}

}  // namespace

std::vector<std::string> read_vlen_strings(hid_t dataset, std::size_t count) {
  std::vector<std::string> out;
  if (count == 0) return out;
  const RawFile file(dataset);
  const std::size_t width = 4 + file.size_of_offsets() + 4;
  const std::vector<std::uint8_t> refs = read_references(dataset, file, count, width);
  std::map<std::uint64_t, Collection> heaps;
  std::uint64_t total = 0;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint8_t* r = refs.data() + i * width;
    const std::uint64_t length = little_endian(r, 4);
    const std::uint64_t address = little_endian(r + 4, file.size_of_offsets());
    const std::uint64_t index = little_endian(r + 4 + file.size_of_offsets(), 4);
    if (address == 0 || length == 0) {  // HDF5's nil reference, or an empty string
      out.emplace_back();
      continue;
    }
    auto heap = heaps.find(address);
    if (heap == heaps.end()) heap = heaps.emplace(address, read_collection(file, address)).first;
    const auto object = heap->second.objects.find(static_cast<std::uint32_t>(index));
    if (index > 0xffff || object == heap->second.objects.end())
      damaged("string " + std::to_string(i) + " points at object " + std::to_string(index) +
              " of the global heap collection at address " + std::to_string(address) + ", which has none");
    if (length > object->second.second)
      damaged("string " + std::to_string(i) + " claims " + std::to_string(length) + " bytes but its heap object has " +
              std::to_string(object->second.second));
    // Every string is stored once: together they cannot exceed the file.
    total += length;
    if (total > file.size()) damaged("the strings claim more bytes than the file holds");
    const char* begin = reinterpret_cast<const char*>(heap->second.bytes.data() + object->second.first);
    const void* nul = std::memchr(begin, '\0', static_cast<std::size_t>(length));
    out.emplace_back(begin, nul ? static_cast<const char*>(nul) - begin : static_cast<std::ptrdiff_t>(length));
  }
  return out;
}

}  // namespace trainer::h5
