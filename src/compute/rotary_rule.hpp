#pragma once
// The rotation of one (a, b) pair by a rotary position embedding's angle, written
// once for the CPU loop (cpu_transformer_ops.cpp) and the CUDA kernel
// (kernels/rotary.cu), so both backends apply the same formula in the same order.
//
// Hugging Face's DINOv3 writes it as x * cos + rotate_half(x) * sin, where
// rotate_half(x) = [-x2, x1] for the halves x1, x2 of a head: element i and
// element i + head_dim / 2 share one angle and turn as a 2-D vector. The backward
// is the transposed (inverse) rotation, since a rotation is orthogonal.
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

}  // namespace trainer::compute
