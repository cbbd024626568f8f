#pragma once
// Parser for DeepLabCut / lightning-pose label files (CollectedData.csv):
//   scorer,    s, s, s, ...        (header row 1)
//   [individuals, ...]             (multi-animal DeepLabCut only; names become individual_bodypart)
//   bodyparts, nose, nose, ...     (header row 2)
//   coords,    x, y, visible...    (header row 3: x and y are used, and lightning-pose's
//                                   `visible` flag (data/visibility.hpp); other coordinates
//                                   such as likelihood are recognised and skipped)
//   labeled-data/img01.png, 77.25, 36.25, ...
// The index may span several leading columns (newer DeepLabCut writes
// labeled-data,<video>,<image>); they are joined with '/'. Empty cells and "nan"
// are NaN. Every problem is a UserError with file:line.
#include <cstdint>  // std::uint8_t
#include <string>  // std::string
#include <vector>  // std::vector

namespace trainer::data {

struct LabelTable {
  std::string source;                       // file name, for messages
  std::vector<std::string> keypoint_names;  // K, in column order
  std::vector<std::string> frame_paths;     // N, as written in the index column(s)
  std::vector<int> lines;                   // N, 1-based line of each row
  std::vector<float> keypoints;             // N*K*2 (x, y)
  // N*K flags of the `visible` column (0, 1, 2, or kNoVisibilityFlag for an empty cell
  // or a keypoint without the column); empty when no keypoint has the column.
  std::vector<std::uint8_t> visibility;
  std::vector<std::string> skipped_coords;  // distinct other coordinate names, e.g. "likelihood"
  std::size_t num_frames() const { return frame_paths.size(); }
  std::size_t num_keypoints() const { return keypoint_names.size(); }
};

LabelTable parse_label_csv(const std::string& path);
// The same from text in memory; `source` names it in messages.
LabelTable parse_label_csv_text(const std::string& text, const std::string& source);

}  // namespace trainer::data
