// Inputs found by the fuzz harnesses in tests/fuzz (docs/BUILD.md, "Fuzzing"), each
// kept as the bytes that made the harness fail: a seed file from the checked-in
// corpus with the fuzzer's changes applied. Each must now be a UserError.
#include <catch2/catch.hpp>  // TEST_CASE, REQUIRE, CHECK

#include <cstddef>     // std::size_t
#include <cstdint>     // std::int64_t, std::uint8_t
#include <fstream>     // std::ifstream, std::ofstream
#include <iterator>    // std::istreambuf_iterator
#include <string>      // std::string
#include <utility>     // std::pair
#include <vector>      // std::vector

#include "data/dataset.hpp"  // Dataset
#include "scratch_dir.hpp"   // ScratchDir
#include "util/error.hpp"    // UserError
#include "util/h5.hpp"       // Handle, H5_OWN, H5_CHECK
#include "util/h5_io.hpp"    // write_strings, write_dataset

using trainer::UserError;
using trainer::data::Dataset;

namespace {

namespace h5 = trainer::h5;

// A corpus seed of the fuzz_dataset_open harness with bytes replaced at offsets.
std::string patched_seed(const std::string& seed, const std::vector<std::pair<std::size_t, unsigned char>>& patches) {
  std::ifstream in(std::string(TRAINER_SOURCE_DIR) + "/tests/fuzz/corpus/fuzz_dataset_open/" + seed, std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  REQUIRE(!bytes.empty());
  for (const auto& [offset, value] : patches) {
    REQUIRE(offset < bytes.size());
    bytes[offset] = static_cast<char>(value);
  }
  return bytes;
}

// A valid file of three 4x4 gray frames (one keypoint) with these video ids.
void write_with_videos(const std::string& path, const std::vector<std::int64_t>& video_ids) {
  h5::silence_errors_on_this_thread();
  h5::Handle file = H5_OWN(file, H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  const std::vector<float> keypoints(3 * 2, 1.0f);
  const hsize_t dims[4] = {3, 4, 4, 1};
  h5::Handle space = H5_OWN(dataspace, H5Screate_simple(4, dims, nullptr));
  h5::Handle set = H5_OWN(dataset, H5Dcreate2(file.get(), "/images", H5T_STD_U8LE, space.get(), H5P_DEFAULT,
                                              H5P_DEFAULT, H5P_DEFAULT));
  const std::vector<std::uint8_t> pixels(3 * 4 * 4, 7);
  H5_CHECK(H5Dwrite(set.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, pixels.data()));
  h5::write_dataset(file.get(), "/keypoints", {3, 1, 2}, keypoints.data());
  h5::write_strings(file.get(), "/keypoint_names", {"nose"});
  h5::write_strings(file.get(), "/frame_paths", {"a.png", "b.png", "c.png"});
  const std::vector<std::int64_t> frame_numbers = {0, 1, 2};
  h5::write_dataset(file.get(), "/video_id", {3}, video_ids.data());
  h5::write_dataset(file.get(), "/frame_number", {3}, frame_numbers.data());
}

// Dataset::open of the file must throw a UserError containing `fragment`.
void expect_file_fails(const std::string& path, const std::string& fragment) {
  try {
    Dataset::open({path});
    FAIL("no error for the fuzzer's input");
  } catch (const UserError& e) {
    INFO("message: " << e.what());
    CHECK(std::string(e.what()).find(fragment) != std::string::npos);
  }
}

// The same for a file holding `bytes`.
void expect_bytes_fail(const std::string& bytes, const std::string& fragment) {
  trainer::data::testing::ScratchDir dir("fuzz-finding");
  const std::string path = dir.file("finding.h5");
  std::ofstream(path, std::ios::binary) << bytes;
  expect_file_fails(path, fragment);
}

}  // namespace

TEST_CASE("fuzz finding: a string dataset whose dataspace claims 2^60 elements", "[data][fuzz]") {
  // The extent of /keypoint_names (1 in rgb-deflate.h5) became 15 << 56 in the file,
  // above its own maximum extent; HDF5 opens the dataset anyway, and read_strings
  // reserved room for every string: std::length_error instead of a UserError.
  expect_bytes_fail(patched_seed("rgb-deflate.h5", {{7408, 0}, {7415, 15}, {13566, 52}}),
                    "dataset /keypoint_names: claims 1080863910568919040 elements");
}

TEST_CASE("fuzz finding: frames taller than an int can count", "[data][fuzz]") {
  // fuzz_dataset_schema's recipe: /images uint8 [3, 2^32 + 1, 4, 3], chunked one frame
  // per chunk (extendible) and never written, so the file stays small; the other
  // datasets are valid. The height was cast to int and the dataset opened with 1x4x3
  // frames, silently reading the wrong pixels.
  trainer::data::testing::ScratchDir dir("fuzz-finding");
  const std::string path = dir.file("tall.h5");
  {
    h5::silence_errors_on_this_thread();
    h5::Handle file = H5_OWN(file, H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    const hsize_t dims[4] = {3, (hsize_t{1} << 32) + 1, 4, 3};
    const hsize_t max[4] = {H5S_UNLIMITED, H5S_UNLIMITED, H5S_UNLIMITED, H5S_UNLIMITED};
    const hsize_t chunk[4] = {1, 64, 4, 3};
    h5::Handle space = H5_OWN(dataspace, H5Screate_simple(4, dims, max));
    h5::Handle plist = H5_OWN(plist, H5Pcreate(H5P_DATASET_CREATE));
    H5_CHECK(H5Pset_chunk(plist.get(), 4, chunk));
    H5_OWN(dataset, H5Dcreate2(file.get(), "/images", H5T_STD_U8LE, space.get(), H5P_DEFAULT, plist.get(), H5P_DEFAULT));
    const std::vector<float> keypoints(3 * 2 * 2, 1.0f);
    h5::write_dataset(file.get(), "/keypoints", {3, 2, 2}, keypoints.data());
    h5::write_strings(file.get(), "/keypoint_names", {"nose", "tail"});
    h5::write_strings(file.get(), "/frame_paths", {"a.png", "b.png", "c.png"});
  }
  expect_file_fails(path, "dataset /images: frames of 4294967297x4 pixels");
}

TEST_CASE("fuzz finding: video ids that cannot be told apart across shards", "[data][fuzz]") {
  trainer::data::testing::ScratchDir dir("fuzz-finding");
  SECTION("ids near 2^63 overflow the offset that numbers the next shard's videos") {
    // fuzz_dataset_schema's recipe: one file with /video_id values up to
    // 8138269444283625712, opened as two shards; the second shard's ids were shifted
    // by max + 1 in signed 64-bit arithmetic (UBSan: signed integer overflow).
    const std::string path = dir.file("big_ids.h5");
    write_with_videos(path, {0, 8138269444283625712, 8138269444283625712});
    CHECK(Dataset::open({path}).video_id(2) == 8138269444283625712);  // one shard: no offset, fine
    try {
      Dataset::open({path, path});
      FAIL("no error for two shards");
    } catch (const UserError& e) {
      INFO("message: " << e.what());
      CHECK(std::string(e.what()).find("dataset /video_id: video id 8138269444283625712 is too large") !=
            std::string::npos);
    }
  }
  SECTION("negative ids: the next shard's videos would merge into this one's") {
    const std::string first = dir.file("first.h5"), second = dir.file("second.h5");
    write_with_videos(first, {0, 0, 1});
    write_with_videos(second, {-2, -2, -1});  // shifted by 2 they were videos 0 and 1 again
    expect_file_fails(second, "dataset /video_id: video id -2 is negative");
  }
}

TEST_CASE("review finding: a damaged string reference of an older file is a UserError, not a SIGSEGV", "[data][fuzz]") {
  // Issue 26: overwriting a few bytes of a gzip dataset that `trainer import` wrote
  // (before files carried a checksum) crashed `trainer train` in HDF5's H5HG_read:
  // /frame_paths held an object index that the global heap does not have, and HDF5
  // follows it unchecked. The same damage to a corpus seed of that age: one high byte
  // of string 1's index (a reference is 4 bytes of length, 8 of address, 4 of index).
  trainer::data::testing::ScratchDir dir("review");
  const std::string path = dir.file("seed.h5");
  std::ofstream(path, std::ios::binary) << patched_seed("rgb-deflate.h5", {});
  haddr_t references = 0;
  {
    h5::silence_errors_on_this_thread();
    h5::Handle file = H5_OWN(file, H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
    h5::Handle paths = H5_OWN(dataset, H5Dopen2(file.get(), "/frame_paths", H5P_DEFAULT));
    references = H5Dget_offset(paths.get());
  }
  REQUIRE(references != HADDR_UNDEF);
  expect_bytes_fail(patched_seed("rgb-deflate.h5", {{references + 16 + 14, 0x61}}),
                    "dataset /frame_paths: string 1 points at object");
}
