// Max pooling kernels; see pool.cuh.
#include "pool.cuh"

#include <cstddef>  // std::size_t

#include "launch.cuh"  // blocks_for, kThreads

namespace trainer::kernels {
namespace {

using detail::blocks_for;
using detail::kThreads;

// Index (within the plane) of the window's maximum, as the CPU twin: the first
// maximum in row-major window order wins, the first NaN wins outright, padding
// never wins. Returns -1 for a window that lies entirely in the padding.
__device__ inline int window_argmax(const float* plane, const PoolShape& p, int oy, int ox) {
  const int y0 = oy * p.stride - p.pad, x0 = ox * p.stride - p.pad;
  int best = -1;
  float best_v = -INFINITY;
  for (int ky = 0; ky < p.kernel; ++ky) {
    const int y = y0 + ky;
    if (y < 0 || y >= p.h) continue;
    for (int kx = 0; kx < p.kernel; ++kx) {
      const int x = x0 + kx;
      if (x < 0 || x >= p.w) continue;
      const float v = plane[y * p.w + x];
      if (best < 0 || v > best_v || isnan(v)) {
        best = y * p.w + x;
        best_v = v;
        if (isnan(v)) return best;
      }
    }
  }
  return best;
}

__global__ void forward_kernel(const float* x, float* y, PoolShape p, std::size_t total) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(blockDim.x) * gridDim.x) {
    const int ox = static_cast<int>(i % p.ow);
    const int oy = static_cast<int>((i / p.ow) % p.oh);
    const std::size_t nc = i / (std::size_t(p.ow) * p.oh);
    const float* plane = x + nc * p.h * p.w;
    const int a = window_argmax(plane, p, oy, ox);
    y[i] = a >= 0 ? plane[a] : -INFINITY;
  }
}

// One thread per input element: sums dy over the outputs whose argmax it is.
__global__ void backward_kernel(const float* x, const float* dy, float* dx, PoolShape p,
                                std::size_t total) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(blockDim.x) * gridDim.x) {
    const int ix = static_cast<int>(i % p.w);
    const int iy = static_cast<int>((i / p.w) % p.h);
    const std::size_t nc = i / (std::size_t(p.w) * p.h);
    const float* plane = x + nc * p.h * p.w;
    const float* dplane = dy + nc * p.oh * p.ow;
    const int self = iy * p.w + ix;
    // Outputs oy with oy*stride - pad <= iy < oy*stride - pad + kernel.
    int oy_lo = (iy + p.pad - p.kernel + p.stride) / p.stride;  // ceil((iy+pad-k+1)/stride)
    if (iy + p.pad - p.kernel + 1 < 0) oy_lo = 0;
    int oy_hi = (iy + p.pad) / p.stride;
    if (oy_hi > p.oh - 1) oy_hi = p.oh - 1;
    int ox_lo = (ix + p.pad - p.kernel + p.stride) / p.stride;
    if (ix + p.pad - p.kernel + 1 < 0) ox_lo = 0;
    int ox_hi = (ix + p.pad) / p.stride;
    if (ox_hi > p.ow - 1) ox_hi = p.ow - 1;
    float g = 0.f;
    for (int oy = oy_lo; oy <= oy_hi; ++oy)
      for (int ox = ox_lo; ox <= ox_hi; ++ox)
        if (window_argmax(plane, p, oy, ox) == self) g += dplane[oy * p.ow + ox];
    dx[i] = g;
  }
}

}  // namespace

void maxpool2d_forward(const float* x, float* y, const PoolShape& p, cudaStream_t s) {
  const std::size_t total = std::size_t(p.n) * p.c * p.oh * p.ow;
  if (total) forward_kernel<<<blocks_for(total), kThreads, 0, s>>>(x, y, p, total);
}

void maxpool2d_backward(const float* x, const float* dy, float* dx, const PoolShape& p,
                        cudaStream_t s) {
  const std::size_t total = std::size_t(p.n) * p.c * p.h * p.w;
  if (total) backward_kernel<<<blocks_for(total), kThreads, 0, s>>>(x, dy, dx, p, total);
}

}  // namespace trainer::kernels
