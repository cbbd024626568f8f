// libFuzzer harness: the DeepLabCut label CSV reader behind `trainer import`
// (data/label_csv.cpp). An accepted table must be consistent: one path and one line
// per frame, K*2 coordinates per frame.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint8_t
#include <string>   // std::string

#include "data/label_csv.hpp"  // parse_label_csv_text
#include "fuzz_support.hpp"    // ScratchFile, expect_user_errors_only

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  trainer::fuzz::expect_user_errors_only([&] {
    const trainer::data::LabelTable table = trainer::data::parse_label_csv_text(text, "fuzz.csv");
    const std::size_t n = table.num_frames(), k = table.num_keypoints();
    if (n == 0 || k == 0 || table.lines.size() != n || table.keypoints.size() != n * k * 2)
      trainer::fuzz::ScratchFile::finding("inconsistent table: " + std::to_string(n) + " frames, " +
                                          std::to_string(k) + " keypoints, " + std::to_string(table.lines.size()) +
                                          " lines, " + std::to_string(table.keypoints.size()) + " coordinates");
  });
  return 0;
}
