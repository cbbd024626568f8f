#pragma once
// The two maps of a semi-supervised step's unlabelled clip (StepRunner::stage_unlabeled):
// its soft-argmax keypoints (network-input pixels of the augmented frames) go back to
// the un-augmented frame (lightning-pose's undo_affine_transform_batch, when the clip
// was augmented) and into original-frame pixels (its model_to_frame: one scale per
// video), where the unsupervised losses and their epsilons are measured; the losses'
// gradient comes back through the first map's transposed linear part, times `factor`
// (the annealed importance and the accumulation divisor; 16-mixed's loss scale is
// applied on the device, by LossScaler::scale_gradient). Both
// live in device memory, so a recorded step replays with each clip's own.
#include <vector>  // std::vector

#include "compute/affine_points.hpp"  // AffineMap2D

namespace trainer::train {

struct UnlabeledMaps {
  compute::AffineMap2D to_frame;  // keypoints: first the unwarp, then the frame scale
  compute::AffineMap2D back;      // their gradient: factor * to_frame's linear part, transposed
};

// `unwarp`: the clip's 6 affine coefficients (AffineMap2D::m), or empty (not augmented);
// scale_x, scale_y: network-input to original-frame pixels.
UnlabeledMaps unlabeled_maps(const std::vector<float>& unwarp, float scale_x, float scale_y, double factor);

}  // namespace trainer::train
