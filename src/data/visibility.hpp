#pragma once
// lightning-pose's per-keypoint visibility flags (its label files' optional third
// coordinate `visible`, lightning-pose 2.1.2+; parse_label_csv in utils/io.py), as
// label files, data files (/visibility) and batches carry them. What each flag does
// to the heatmap target is decided in one place, train/label_target.hpp.
#include <cstdint>  // std::uint8_t

namespace trainer::data {

// 0: not labelled in this data set: no target, out of the loss (even with x, y).
inline constexpr std::uint8_t kNotLabeled = 0;
// 1: labelled but occluded: the uniform target 1/(h*w), in the loss (even with x, y).
inline constexpr std::uint8_t kOccluded = 1;
// 2: visible: the Gaussian at (x, y); none when x, y are NaN or pushed out of the frame.
inline constexpr std::uint8_t kVisible = 2;
// No flag: the label file has no `visible` column for the keypoint (or the cell is
// empty). The keypoint follows training.uniform_heatmaps_for_nan_keypoints, as
// lightning-pose's HeatmapDataset synthesises flags for a file without the column.
inline constexpr std::uint8_t kNoVisibilityFlag = 255;

// Whether a stored byte is one of the four values above.
inline bool is_visibility_value(std::uint8_t v) {
  return v == kNotLabeled || v == kOccluded || v == kVisible || v == kNoVisibilityFlag;
}

}  // namespace trainer::data
