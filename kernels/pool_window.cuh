#pragma once
// Max pooling's window rules, written once for the NCHW fp32 kernels (pool.cu) and
// the NHWC 16-bit ones (nhwc16.cu), which differ only in where a value lies: the
// argmax of a window (PyTorch's tie and NaN rules) and the outputs whose windows
// cover an input pixel (the backward's gather). Device code only.
#include <cmath>  // INFINITY, isnan

#include "pool.cuh"  // PoolShape

namespace trainer::kernels::detail {

// Index y * w + x of the window's maximum, as the CPU twin: the first maximum in
// row-major window order wins, the first NaN wins outright, padding never wins.
// Returns -1 for a window that lies entirely in the padding. value(y, x) reads the
// input at row y, column x of the plane (or the channel of the image) in question.
template <typename Value>
__device__ inline int window_argmax(const PoolShape& p, int oy, int ox, Value value) {
  const int y0 = oy * p.stride - p.pad, x0 = ox * p.stride - p.pad;
  int best = -1;
  float best_v = -INFINITY;
  for (int ky = 0; ky < p.kernel; ++ky) {
    const int y = y0 + ky;
    if (y < 0 || y >= p.h) continue;
    for (int kx = 0; kx < p.kernel; ++kx) {
      const int x = x0 + kx;
      if (x < 0 || x >= p.w) continue;
      const float v = value(y, x);
      if (best < 0 || v > best_v || isnan(v)) {
        best = y * p.w + x;
        best_v = v;
        if (isnan(v)) return best;
      }
    }
  }
  return best;
}

// The outputs [oy_lo, oy_hi] x [ox_lo, ox_hi] whose windows cover input pixel (iy, ix):
// oy * stride - pad <= iy < oy * stride - pad + kernel.
struct CoveringOutputs {
  int oy_lo, oy_hi, ox_lo, ox_hi;
};
__device__ inline CoveringOutputs covering_outputs(const PoolShape& p, int iy, int ix) {
  CoveringOutputs c;
  c.oy_lo = iy + p.pad - p.kernel + 1 < 0 ? 0 : (iy + p.pad - p.kernel + p.stride) / p.stride;
  c.oy_hi = (iy + p.pad) / p.stride;
  if (c.oy_hi > p.oh - 1) c.oy_hi = p.oh - 1;
  c.ox_lo = ix + p.pad - p.kernel + 1 < 0 ? 0 : (ix + p.pad - p.kernel + p.stride) / p.stride;
  c.ox_hi = (ix + p.pad) / p.stride;
  if (c.ox_hi > p.ow - 1) c.ox_hi = p.ow - 1;
  return c;
}

}  // namespace trainer::kernels::detail
