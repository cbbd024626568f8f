#pragma once
// lightning-pose's rules for which keypoints count in the heatmap loss, written
// once for the CPU ops, the CUDA kernels (kernels/heatmap.cu) and the training
// step, which counts them on the host so that data-parallel loss weighting needs
// no device round trip.
#include "compute/host_device.hpp"  // TRAINER_HOST_DEVICE

namespace trainer::compute {

// A keypoint (x, y in heatmap pixels of an h x w heatmap) counts unless a
// coordinate is NaN or it lies outside [-1, w + 1] x [-1, h + 1]
// (generate_heatmaps in lightning-pose zeroes those targets).
TRAINER_HOST_DEVICE inline bool keypoint_counts(float x, float y, int h, int w) {
  const bool is_nan = x != x || y != y;  // no <cmath>: the same test on host and device
  return !is_nan && x >= -1.f && x <= float(w + 1) && y >= -1.f && y <= float(h + 1);
}

// lightning-pose's uniform_heatmaps_for_nan_keypoints: a keypoint with no label in
// the data (visibility 1 in its generate_heatmaps) gets the uniform target 1/(h*w)
// and counts in the loss, while one that augmentation pushed out of the frame still
// gets no target. The training step marks such a keypoint by writing this value to
// both coordinates (an image coordinate can never be this large).
inline constexpr float kUniformTargetMark = 3.0e38f;

TRAINER_HOST_DEVICE inline bool wants_uniform_target(float x, float y) {
  return x == kUniformTargetMark && y == kUniformTargetMark;
}

// Whether the keypoint counts in the loss: a Gaussian target or a uniform one.
TRAINER_HOST_DEVICE inline bool keypoint_has_target(float x, float y, int h, int w) {
  return wants_uniform_target(x, y) || keypoint_counts(x, y, h, w);
}

}  // namespace trainer::compute
