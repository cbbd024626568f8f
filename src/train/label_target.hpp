#pragma once
// Which heatmap target a labelled keypoint trains on: lightning-pose's rule (f54c477:
// generate_heatmaps in data/heatmaps.py with the flags HeatmapDataset passes), in one
// place for training and validation. The batch stager turns the answer into what the
// target op reads (compute/keypoint_rule.hpp): NaN, the uniform mark, or the keypoint.
#include <cstdint>  // std::uint8_t

#include "data/visibility.hpp"  // kNotLabeled, kOccluded, kVisible, kNoVisibilityFlag

namespace trainer::train {

enum class LabelTarget {
  kNone,      // an all-zero target: out of the loss
  kUniform,   // 1/(h*w) everywhere: in the loss, asks for low confidence
  kKeypoint,  // the Gaussian at the keypoint; none when it is NaN or out of the frame
};

// `visibility`: the label's flag (data/visibility.hpp); `missing`: the data has no
// x, y for it; `uniform_missing`: training.uniform_heatmaps_for_nan_keypoints.
// - 0 (not labelled): no target, even with x, y;
// - 1 (occluded): uniform, even with x, y, and even when augmentation moved them out
//   of the frame (lightning-pose sets the uniform target after the out-of-frame test);
// - 2 (visible): the keypoint;
// - no flag (a label file without the column): what lightning-pose synthesises, 1 for
//   a missing keypoint when uniform_missing, else 0, and 2 for a labelled one.
inline LabelTarget label_target(std::uint8_t visibility, bool missing, bool uniform_missing) {
  switch (visibility) {
    case data::kNotLabeled: return LabelTarget::kNone;
    case data::kOccluded: return LabelTarget::kUniform;
    case data::kVisible: return LabelTarget::kKeypoint;
    default:  // kNoVisibilityFlag
      if (!missing) return LabelTarget::kKeypoint;
      return uniform_missing ? LabelTarget::kUniform : LabelTarget::kNone;
  }
}

}  // namespace trainer::train
