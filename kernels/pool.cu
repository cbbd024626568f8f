// Max pooling kernels; see pool.cuh.
#include "pool.cuh"

#include <cstddef>  // std::size_t

#include "launch.cuh"       // blocks_for, kThreads
#include "pool_window.cuh"  // window_argmax, covering_outputs

namespace trainer::kernels {
namespace {

using detail::blocks_for;
using detail::CoveringOutputs;
using detail::covering_outputs;
using detail::kThreads;
using detail::window_argmax;

// The window's argmax within an NCHW plane.
__device__ inline int plane_argmax(const float* plane, const PoolShape& p, int oy, int ox) {
  return window_argmax(p, oy, ox, [&](int y, int x) { return plane[y * p.w + x]; });
}

__global__ void forward_kernel(const float* x, float* y, PoolShape p, std::size_t total) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(blockDim.x) * gridDim.x) {
    const int ox = static_cast<int>(i % p.ow);
    const int oy = static_cast<int>((i / p.ow) % p.oh);
    const std::size_t nc = i / (std::size_t(p.ow) * p.oh);
    const float* plane = x + nc * p.h * p.w;
    const int a = plane_argmax(plane, p, oy, ox);
    y[i] = a >= 0 ? plane[a] : -INFINITY;
  }
}

// The backward pass in two launches over a 2-D grid (x: pixels of a plane, y:
// planes, so the index arithmetic is 32-bit). Recomputing every covering window's
// argmax per input element (up to 4 windows of 9 reads each, with 64-bit index
// division) took 2.75 ms of a bf16 ResNet-50 step at batch 64 on an H200
// (2026-11-26), for a pass whose bytes take about 0.2 ms.

// Pass 1: each output's argmax within its plane (-1 for an all-padding window).
__global__ void argmax_kernel(const float* x, int* argmax, PoolShape p, int planes) {
  const int outputs = p.oh * p.ow;
  for (int plane = blockIdx.y; plane < planes; plane += gridDim.y) {
    const float* xp = x + std::size_t(plane) * p.h * p.w;
    for (int o = blockIdx.x * blockDim.x + threadIdx.x; o < outputs; o += blockDim.x * gridDim.x)
      argmax[std::size_t(plane) * outputs + o] = plane_argmax(xp, p, o / p.ow, o % p.ow);
  }
}

// Pass 2: each input element sums dy over the outputs whose argmax it is, in the
// CPU twin's order (output rows, then columns), so the sums are the same bits.
__global__ void gather_kernel(const int* argmax, const float* dy, float* dx, PoolShape p, int planes) {
  const int pixels = p.h * p.w, outputs = p.oh * p.ow;
  for (int plane = blockIdx.y; plane < planes; plane += gridDim.y) {
    const int* ap = argmax + std::size_t(plane) * outputs;
    const float* dp = dy + std::size_t(plane) * outputs;
    for (int self = blockIdx.x * blockDim.x + threadIdx.x; self < pixels; self += blockDim.x * gridDim.x) {
      const CoveringOutputs c = covering_outputs(p, self / p.w, self % p.w);
      float g = 0.f;
      for (int oy = c.oy_lo; oy <= c.oy_hi; ++oy)
        for (int ox = c.ox_lo; ox <= c.ox_hi; ++ox)
          if (ap[oy * p.ow + ox] == self) g += dp[oy * p.ow + ox];
      dx[std::size_t(plane) * pixels + self] = g;
    }
  }
}

// Blocks over a plane's `items` (x) and the planes (y, at most 65535).
dim3 plane_grid(int items, int planes) {
  const int per_plane = (items + kThreads - 1) / kThreads;
  return dim3(unsigned(per_plane < 1 ? 1 : per_plane), unsigned(planes < 65535 ? planes : 65535));
}

}  // namespace

void maxpool2d_forward(const float* x, float* y, const PoolShape& p, cudaStream_t s) {
  const std::size_t total = std::size_t(p.n) * p.c * p.oh * p.ow;
  if (total) forward_kernel<<<blocks_for(total), kThreads, 0, s>>>(x, y, p, total);
}

void maxpool2d_backward(const float* x, const float* dy, float* dx, int* argmax_scratch, const PoolShape& p,
                        cudaStream_t s) {
  const int planes = p.n * p.c;
  if (!planes || !p.h || !p.w) return;
  argmax_kernel<<<plane_grid(p.oh * p.ow, planes), kThreads, 0, s>>>(x, argmax_scratch, p, planes);
  gather_kernel<<<plane_grid(p.h * p.w, planes), kThreads, 0, s>>>(argmax_scratch, dy, dx, p, planes);
}

}  // namespace trainer::kernels
