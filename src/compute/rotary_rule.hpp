#pragma once
// The rotation of one (a, b) pair by a rotary position embedding's angle, and that
// angle itself, written once for the host tables (model/rope_tables.cpp), the CPU
// loops (cpu_transformer_rotary.cpp) and the CUDA kernels (kernels/rotary.cu), so
// every backend applies the same formula in the same order.
//
// Hugging Face's DINOv3 writes it as x * cos + rotate_half(x) * sin, where
// rotate_half(x) = [-x2, x1] for the halves x1, x2 of a head: element i and
// element i + head_dim / 2 share one angle and turn as a 2-D vector. The backward
// is the transposed (inverse) rotation, since a rotation is orthogonal.
#include <math.h>  // cos, sin (double: the host's and CUDA's device overloads)

#include "compute/host_device.hpp"  // TRAINER_HOST_DEVICE

namespace trainer::compute {

// (a, b) <- (a cos - b sin, b cos + a sin); inverse: the rotation by -angle.
TRAINER_HOST_DEVICE inline void rotate_pair(float& a, float& b, float cos_t, float sin_t, bool inverse) {
  const float s = inverse ? -sin_t : sin_t;
  const float ra = a * cos_t - b * s;
  const float rb = b * cos_t + a * s;
  a = ra;
  b = rb;
}

// DINOv3's RoPE angle (Hugging Face's DINOv3ViTRopePositionEmbedding) of element
// i < head_dim / 2 of patch (y, x) of a grid_h x grid_w grid: the patch centre's
// coordinate on each axis, normalised to [-1, 1] (y for i < quarter = head_dim / 4,
// x after), times `scale` (the train-time coordinate rescale; 1 in eval mode, where
// the product is exact), times 2 pi and inv_freq[i % quarter]. float32 in PyTorch's
// order of operations.
TRAINER_HOST_DEVICE inline float rotary_angle(int y, int x, int i, int grid_h, int grid_w, int quarter,
                                              float inv_freq, float scale) {
  const bool vertical = i < quarter;
  const float position = float(vertical ? y : x) + 0.5f, extent = float(vertical ? grid_h : grid_w);
  const float coord = (2.f * (position / extent) - 1.f) * scale;
  const float two_pi = 6.28318530717958647692f;
  return (two_pi * coord) * inv_freq;
}

// Its cosine and sine, evaluated in double and rounded (within an ulp of PyTorch's
// float32 cos / sin, and the same on the host and the device).
TRAINER_HOST_DEVICE inline void rotary_cos_sin(float angle, float& cos_t, float& sin_t) {
  cos_t = float(cos(double(angle)));
  sin_t = float(sin(double(angle)));
}

}  // namespace trainer::compute
