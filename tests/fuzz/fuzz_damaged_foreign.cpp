// libFuzzer harness: an HDF5 data set without the trainer's checksum (written by
// h5py, tests/data/hdf5-foreign/) with 1 to 8 bytes overwritten (damage_mutator.hpp),
// opened as `trainer train` opens data_files and its first and last frame read, with
// the foreign-file screen on (util/h5_screen.hpp): HDF5's walk of the file runs in a
// copy of this harness first, so the crashes, reads past buffers and loops of libhdf5
// 1.10 on such damage (which fuzz_dataset_open finds within a minute) must end in the
// screen's UserError here, never in this process.
//
// The copy is this binary run as `<harness> __screen-hdf5 ...`, answered in
// LLVMFuzzerInitialize before libFuzzer reads its arguments. There AddressSanitizer
// catches HDF5's reads past a buffer even where they would not fault (its report goes
// to /dev/null, its exit status is the screen's refusal). One process start per
// input: slower than the other harnesses, by design.
#include <unistd.h>  // _exit

#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint8_t
#include <cstring>  // std::strcmp
#include <string>   // std::string
#include <vector>   // std::vector

#include "damage_mutator.hpp"   // LLVMFuzzerCustomMutator
#include "data/dataset.hpp"     // Dataset
#include "fuzz_support.hpp"     // ScratchFile, expect_user_errors_only
#include "util/h5_screen.hpp"   // h5::enable_screen, h5::run_screen_child

namespace {
constexpr std::size_t kMaxFrameBytes = std::size_t{64} << 20;  // as fuzz_damaged_dataset

trainer::h5::ScreenSettings screen_settings() {
  trainer::h5::ScreenSettings settings;
  settings.seconds = 5;  // under libFuzzer's -timeout=10 (scripts/fuzz.sh): a loop is the screen's to report
  return settings;
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  if (*argc >= 2 && std::strcmp((*argv)[1], trainer::h5::kScreenSubcommand) == 0)
    _exit(trainer::h5::run_screen_child(std::vector<std::string>(*argv + 2, *argv + *argc)));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const trainer::fuzz::ScratchFile input(".h5");
  input.write(data, size);
  // Every input screened afresh: the screen remembers a file by inode, size and
  // modification time, and two inputs of one size written within the file system's
  // clock tick would look like one file.
  trainer::h5::disable_screen();
  trainer::h5::enable_screen(screen_settings());
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
