#pragma once
// A 2-D affine map of (x, y) points, shared by the CPU op and the CUDA kernel of
// Backend::affine_points. The unsupervised losses use it to take keypoints predicted
// on an augmented unlabelled frame back to the un-augmented frame (lightning-pose's
// undo_affine_transform_batch), and its transpose to take their gradient the other
// way.
#include "compute/host_device.hpp"  // TRAINER_HOST_DEVICE

namespace trainer::compute {

struct AffineMap2D {
  // x' = m[0] x + m[1] y + m[2], y' = m[3] x + m[4] y + m[5]
  float m[6] = {1, 0, 0, 0, 1, 0};
  // The linear part transposed, no offset: what a gradient with respect to the
  // mapped points becomes with respect to the points.
  TRAINER_HOST_DEVICE AffineMap2D transposed_linear() const {
    AffineMap2D t;
    t.m[0] = m[0];
    t.m[1] = m[3];
    t.m[2] = 0.f;
    t.m[3] = m[1];
    t.m[4] = m[4];
    t.m[5] = 0.f;
    return t;
  }
};

TRAINER_HOST_DEVICE inline void apply_affine(const AffineMap2D& a, float* xy) {
  const float x = xy[0], y = xy[1];
  xy[0] = a.m[0] * x + a.m[1] * y + a.m[2];
  xy[1] = a.m[3] * x + a.m[4] * y + a.m[5];
}

}  // namespace trainer::compute
