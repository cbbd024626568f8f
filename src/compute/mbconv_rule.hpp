#pragma once
// The per-element formulas of the MBConv ops (compute/mbconv_ops.hpp), shared by the
// CPU loops (cpu/cpu_mbconv_ops.cpp) and the CUDA kernels (kernels/mbconv.cu) so that
// both round alike: float math, expf as PyTorch's CPU and CUDA sigmoid use it.
#include <cmath>    // std::exp
#include <cstdint>  // std::uint32_t

#include "compute/host_device.hpp"  // TRAINER_HOST_DEVICE

namespace trainer::compute {

TRAINER_HOST_DEVICE inline float mbconv_sigmoid(float x) {
#ifdef __CUDA_ARCH__
  return 1.f / (1.f + expf(-x));
#else
  return 1.f / (1.f + std::exp(-x));
#endif
}

// nn.SiLU: x * sigmoid(x).
TRAINER_HOST_DEVICE inline float silu_value(float x) { return x * mbconv_sigmoid(x); }

// d silu / dx times dy: dy * s * (1 + x * (1 - s)), as PyTorch's silu_backward.
TRAINER_HOST_DEVICE inline float silu_gradient(float x, float dy) {
  const float s = mbconv_sigmoid(x);
  return dy * s * (1.f + x * (1.f - s));
}

// One output of a depthwise convolution: the k x k window of plane `x` (height h,
// width w) at output (oy, ox) with stride and zero padding pad, times the channel's
// filter `f` (k x k, row-major). The taps are summed in row-major order.
TRAINER_HOST_DEVICE inline float depthwise_output(const float* x, int h, int w, const float* f, int k, int stride,
                                                  int pad, int oy, int ox) {
  float sum = 0.f;
  const int y0 = oy * stride - pad, x0 = ox * stride - pad;
  for (int i = 0; i < k; ++i) {
    const int iy = y0 + i;
    if (iy < 0 || iy >= h) continue;
    for (int j = 0; j < k; ++j) {
      const int ix = x0 + j;
      if (ix < 0 || ix >= w) continue;
      sum += x[iy * w + ix] * f[i * k + j];
    }
  }
  return sum;
}

// One input gradient of a depthwise convolution: the sum over the outputs whose
// window covers input (iy, ix) of dy times the filter tap that met it (plane dy of
// height oh, width ow).
TRAINER_HOST_DEVICE inline float depthwise_input_gradient(const float* dy, int oh, int ow, const float* f, int k,
                                                          int stride, int pad, int iy, int ix) {
  float sum = 0.f;
  for (int i = 0; i < k; ++i) {
    const int ty = iy + pad - i;  // = oy * stride
    if (ty < 0 || ty % stride != 0) continue;
    const int oy = ty / stride;
    if (oy >= oh) continue;
    for (int j = 0; j < k; ++j) {
      const int tx = ix + pad - j;
      if (tx < 0 || tx % stride != 0) continue;
      const int ox = tx / stride;
      if (ox >= ow) continue;
      sum += dy[oy * ow + ox] * f[i * k + j];
    }
  }
  return sum;
}

// Stochastic depth's factor for sample `row` (torchvision's StochasticDepth, "row"
// mode): 0 with probability p, else 1 / (1 - p). The uniform draw is a counter-based
// hash of the step's key words (24-bit integers, as exact floats in device memory),
// the layer's salt and the row, so that the CPU, a GPU kernel and a replayed CUDA
// graph draw alike without a generator's state.
TRAINER_HOST_DEVICE inline std::uint32_t stochastic_depth_hash(std::uint32_t a, std::uint32_t b, std::uint32_t salt,
                                                               std::uint32_t row) {
  std::uint32_t h = a * 0x9E3779B1u ^ (b + 0x7F4A7C15u) * 0x85EBCA77u ^ (salt + 0x165667B1u) * 0xC2B2AE3Du ^
                    (row + 0x27D4EB2Fu) * 0x27D4EB2Du;
  h ^= h >> 16;
  h *= 0x7FEB352Du;
  h ^= h >> 15;
  h *= 0x846CA68Bu;
  h ^= h >> 16;
  return h;
}

TRAINER_HOST_DEVICE inline float stochastic_depth_factor(float key0, float key1, std::uint32_t salt, std::uint32_t row,
                                                         float p) {
  const std::uint32_t h = stochastic_depth_hash(std::uint32_t(key0), std::uint32_t(key1), salt, row);
  const float uniform = float(h >> 8) * (1.f / 16777216.f);  // [0, 1), 24 bits
  return uniform < p ? 0.f : 1.f / (1.f - p);
}

}  // namespace trainer::compute
