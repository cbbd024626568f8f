#pragma once
// lightning-pose's rule for which keypoints count in the heatmap loss, written
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

}  // namespace trainer::compute
