// Inputs found by the fuzz harnesses in tests/fuzz (docs/BUILD.md, "Fuzzing"), each
// kept as the bytes that made the harness fail: a seed file from the checked-in
// corpus with the fuzzer's changes applied. Each must now be a UserError.
#include <catch2/catch.hpp>  // TEST_CASE, REQUIRE, CHECK

#include <cstddef>     // std::size_t
#include <fstream>     // std::ifstream, std::ofstream
#include <iterator>    // std::istreambuf_iterator
#include <string>      // std::string
#include <utility>     // std::pair
#include <vector>      // std::vector

#include "data/dataset.hpp"  // Dataset
#include "scratch_dir.hpp"   // ScratchDir
#include "util/error.hpp"    // UserError

using trainer::UserError;
using trainer::data::Dataset;

namespace {

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

// Dataset::open of the bytes must throw a UserError containing `fragment`.
void expect_open_fails(const std::string& bytes, const std::string& fragment) {
  trainer::data::testing::ScratchDir dir("fuzz-finding");
  const std::string path = dir.file("finding.h5");
  std::ofstream(path, std::ios::binary) << bytes;
  try {
    Dataset::open({path});
    FAIL("no error for the fuzzer's input");
  } catch (const UserError& e) {
    INFO("message: " << e.what());
    CHECK(std::string(e.what()).find(fragment) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("fuzz finding: a string dataset whose dataspace claims 2^60 elements", "[data][fuzz]") {
  // The extent of /keypoint_names (1 in rgb-deflate.h5) became 15 << 56 in the file,
  // above its own maximum extent; HDF5 opens the dataset anyway, and read_strings
  // reserved room for every string: std::length_error instead of a UserError.
  expect_open_fails(patched_seed("rgb-deflate.h5", {{7408, 0}, {7415, 15}, {13566, 52}}),
                    "dataset /keypoint_names: claims 1080863910568919040 elements");
}
