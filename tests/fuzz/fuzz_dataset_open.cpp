// libFuzzer harness: opening an HDF5 dataset file (data/dataset.cpp on top of
// util/h5*.cpp), as `trainer train` does with data_files, then reading its first
// and last frame through whichever read path the file's layout selects. Most
// mutated files stop inside libhdf5's own parser, whose bugs are not ours
// (docs/BUILD.md, "Fuzzing"), so CI runs fuzz_dataset_schema instead.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint8_t
#include <vector>   // std::vector

#include "data/dataset.hpp"  // Dataset
#include "fuzz_support.hpp"  // ScratchFile, expect_user_errors_only

namespace {
// A valid file may declare huge frames whose chunks were never written (they read as
// zeros); allocating such a frame would trip the fuzzer's memory limit, not a bug.
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
