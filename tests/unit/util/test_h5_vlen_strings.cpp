// Variable-length string datasets read from the file's bytes (util/h5_vlen_strings):
// the layouts trainer and h5py write read back exactly, and damaged references or
// heap collections are UserErrors. Before this reader, HDF5's own path crashed
// (SIGSEGV in H5HG_read) on an object index that the heap does not have.
#include <catch2/catch.hpp>

#include <fstream>  // std::fstream
#include <string>   // std::string
#include <vector>   // std::vector

#include "../data/scratch_dir.hpp"  // ScratchDir
#include "util/error.hpp"           // UserError
#include "util/h5.hpp"
#include "util/h5_io.hpp"  // write_strings, read_strings, vlen_string_type

namespace h5 = trainer::h5;
using trainer::data::testing::ScratchDir;

namespace {

const std::vector<std::string> kNames = {"nose", "ear_left", "", "paw ü", std::string(300, 'x'), "tail"};

h5::Handle create_file(const std::string& path) {
  h5::silence_errors_on_this_thread();
  return H5_OWN(file, H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
}

std::vector<std::string> read_back(const std::string& path, const char* name = "s") {
  h5::Handle file = H5_OWN(file, H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  h5::Handle set = H5_OWN(dataset, H5Dopen2(file.get(), name, H5P_DEFAULT));
  return h5::read_strings(set.get());
}

// The file offset of a contiguous dataset's raw data (its heap references).
std::uint64_t references_at(const std::string& path) {
  h5::Handle file = H5_OWN(file, H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  h5::Handle set = H5_OWN(dataset, H5Dopen2(file.get(), "s", H5P_DEFAULT));
  return H5Dget_offset(set.get());
}

void overwrite(const std::string& path, std::uint64_t at, const std::vector<unsigned char>& bytes) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(at));
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<unsigned char> read_bytes(const std::string& path, std::uint64_t at, std::size_t n) {
  std::ifstream f(path, std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at));
  std::vector<unsigned char> out(n);
  f.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(n));
  return out;
}

// A chunked vlen string dataset, as h5py writes with compression="gzip", shuffle=True.
void write_chunked(hid_t file, const std::vector<std::string>& values, bool shuffle, int deflate) {
  h5::Handle type = h5::vlen_string_type();
  const hsize_t n = values.size(), chunk = 4;
  h5::Handle space = H5_OWN(dataspace, H5Screate_simple(1, &n, nullptr));
  h5::Handle plist = H5_OWN(plist, H5Pcreate(H5P_DATASET_CREATE));
  H5_CHECK(H5Pset_chunk(plist.get(), 1, &chunk));
  if (shuffle) H5_CHECK(H5Pset_shuffle(plist.get()));
  if (deflate > 0) H5_CHECK(H5Pset_deflate(plist.get(), static_cast<unsigned>(deflate)));
  h5::Handle set = H5_OWN(dataset, H5Dcreate2(file, "s", type.get(), space.get(), H5P_DEFAULT, plist.get(), H5P_DEFAULT));
  std::vector<const char*> pointers;
  for (const auto& v : values) pointers.push_back(v.c_str());
  H5_CHECK(H5Dwrite(set.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data()));
}

}  // namespace

TEST_CASE("vlen strings: contiguous and chunked (shuffle, deflate) layouts read back exactly", "[util][h5]") {
  ScratchDir dir("vlen-layouts");
  {
    const std::string path = dir.file("contiguous.h5");
    {
      h5::Handle file = create_file(path);
      h5::write_strings(file.get(), "s", kNames);
    }
    CHECK(read_back(path) == kNames);
  }
  for (const auto& [shuffle, deflate] : {std::pair{false, 0}, std::pair{false, 6}, std::pair{true, 4}}) {
    const std::string path = dir.file("chunked.h5");
    {
      h5::Handle file = create_file(path);
      write_chunked(file.get(), kNames, shuffle, deflate);
    }
    INFO("shuffle " << shuffle << ", deflate " << deflate);
    CHECK(read_back(path) == kNames);
  }
}

TEST_CASE("vlen strings: a damaged object index is a UserError, not a crash in H5HG_read", "[util][h5]") {
  ScratchDir dir("vlen-index");
  const std::string path = dir.file("d.h5");
  {
    h5::Handle file = create_file(path);
    h5::write_strings(file.get(), "s", kNames);
  }
  // Element 1's reference: length (4), address (8), index (4). The review's file had
  // a high byte of the index overwritten.
  const std::uint64_t element = references_at(path) + 16;
  overwrite(path, element + 14, {0x61});
  CHECK_THROWS_AS(read_back(path), trainer::UserError);
  CHECK_THROWS_WITH(read_back(path), Catch::Matchers::Contains("string 1 points at object") &&
                                         Catch::Matchers::Contains("(truncated or damaged?)"));
  // An index the collection does not hold, though small.
  overwrite(path, element + 12, {0x40, 0x00, 0x00, 0x00});
  CHECK_THROWS_AS(read_back(path), trainer::UserError);
}

TEST_CASE("vlen strings: damaged lengths and heap collections are UserErrors", "[util][h5]") {
  ScratchDir dir("vlen-heap");
  const std::string path = dir.file("d.h5");
  {
    h5::Handle file = create_file(path);
    h5::write_strings(file.get(), "s", kNames);
  }
  const std::uint64_t element = references_at(path);
  const std::vector<unsigned char> original = read_bytes(path, element, 16 * kNames.size());
  const auto restore = [&] { overwrite(path, element, original); };

  SECTION("a length longer than its heap object (HDF5 would copy past its buffer)") {
    overwrite(path, element + 16 * 4, {0xff, 0xff, 0x00, 0x00});
    CHECK_THROWS_WITH(read_back(path), Catch::Matchers::Contains("string 4 claims 65535 bytes"));
  }
  SECTION("an address beyond the end of the file") {
    overwrite(path, element + 4, {0, 0, 0, 0, 0, 0, 0, 0x10});
    CHECK_THROWS_WITH(read_back(path), Catch::Matchers::Contains("beyond the end of the file"));
  }
  SECTION("an address that is not a heap collection") {
    overwrite(path, element + 4, {0x08, 0, 0, 0, 0, 0, 0, 0});
    CHECK_THROWS_WITH(read_back(path), Catch::Matchers::Contains("no GCOL signature"));
  }
  SECTION("a heap object whose size runs past its collection, and a free space of 0 bytes") {
    // Element 0's object in the collection its reference points at.
    std::uint64_t address = 0;
    for (int i = 7; i >= 0; --i) address = (address << 8) | original[static_cast<std::size_t>(4 + i)];
    const std::uint32_t index = original[12] | (original[13] << 8);
    const std::vector<unsigned char> heap = read_bytes(path, address, 4096);
    REQUIRE(std::string(heap.begin(), heap.begin() + 4) == "GCOL");
    std::uint64_t object = 16;  // after the collection header; objects are 16-byte header + data padded to 8
    while (object + 16 <= heap.size() && static_cast<std::uint32_t>(heap[object] | (heap[object + 1] << 8)) != index) {
      std::uint64_t size = 0;
      for (int i = 7; i >= 0; --i) size = (size << 8) | heap[object + 8 + static_cast<std::uint64_t>(i)];
      object += 16 + ((size + 7) & ~std::uint64_t{7});
    }
    REQUIRE(object + 16 <= heap.size());
    overwrite(path, address + object + 8, {0xff, 0xff, 0xff, 0x7f});
    CHECK_THROWS_WITH(read_back(path), Catch::Matchers::Contains("runs past its end"));
    // The object marked as free space (index 0) of size 0: HDF5's parser would never advance.
    overwrite(path, address + object, {0, 0});
    overwrite(path, address + object + 8, {0, 0, 0, 0});
    CHECK_THROWS_WITH(read_back(path), Catch::Matchers::Contains("free space of 0 bytes"));
    overwrite(path, address, heap);
  }
  restore();
  CHECK(read_back(path) == kNames);
}
