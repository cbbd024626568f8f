// libFuzzer harness: a real dataset file with 1 to 8 bytes overwritten
// (damage_mutator.hpp), opened as `trainer train` opens data_files and its first
// and last frame read. The seeds are files `trainer import` (gzip frames,
// variable-length strings) and `trainer synth` wrote, so every input is such a file
// with a little damage: the class that crashed `trainer train` inside HDF5's
// variable-length string read, which the trainer now does itself
// (util/h5_vlen_strings.hpp). Unlike fuzz_dataset_open, which lets libFuzzer mutate
// freely (and mostly finds libhdf5's own bugs), this runs in CI.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint8_t
#include <vector>   // std::vector

#include "damage_mutator.hpp"  // LLVMFuzzerCustomMutator
#include "data/dataset.hpp"    // Dataset
#include "fuzz_support.hpp"    // ScratchFile, expect_user_errors_only

namespace {
// A damaged file may declare frames larger than any seed's: not read (the fuzzer's
// memory limit, not a bug; Dataset::open caps frames at 1 GiB).
constexpr std::size_t kMaxFrameBytes = std::size_t{64} << 20;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const trainer::fuzz::ScratchFile input(".h5");
  input.write(data, size);
  trainer::fuzz::expect_user_errors_only([&] {
    const trainer::data::Dataset dataset = trainer::data::Dataset::open({input.path()});
    if (dataset.frame_bytes() > kMaxFrameBytes) return;
    std::vector<std::uint8_t> frame(dataset.frame_bytes());
    dataset.read_image(0, frame.data());
    dataset.read_image(dataset.size() - 1, frame.data());
  });
  trainer::fuzz::expect_no_open_hdf5_objects();
  return 0;
}
