#pragma once
// The per-plane kernel of every PixelLoss (compute/losses/pixel_loss.hpp), a
// template over the loss's Pixel formula: each loss's .cu
// (src/compute/losses/heatmap_<name>.cu) instantiates pixel_loss_planes for its
// Pixel. Device code: included by .cu files only.
#include <cuda_runtime_api.h>  // cudaStream_t
#include <cstddef>             // std::size_t

#include "compute/losses/heatmap_loss.hpp"  // LossPlanes, kHeatmapLossWeight
#include "launch.cuh"                       // kThreads, block_sum

namespace trainer::kernels {
namespace detail {

// The number of counted planes (flags are 0 or 1).
__device__ inline double sum_flags(const double* flags, int planes, double* shared) {
  double c = 0.0;
  for (int i = threadIdx.x; i < planes; i += blockDim.x) c += flags[i];
  return block_sum(c, shared);
}

// One block per plane: sums[plane] = the plane's loss and dpred its scaled
// gradient, in double as the CPU twin.
template <class Pixel>
__global__ void pixel_loss_planes_kernel(compute::LossPlanes a) {
  __shared__ double shared[32];
  const int plane = blockIdx.x;
  const double valid = sum_flags(a.counted, a.planes, shared);
  const std::size_t base = std::size_t(plane) * a.plane_size;
  if (a.counted[plane] == 0.0) {
    if (a.dpred)
      for (int i = threadIdx.x; i < a.plane_size; i += blockDim.x) a.dpred[base + i] = 0.f;
    if (threadIdx.x == 0) a.sums[plane] = 0.0;
    return;
  }
  const double gs = (valid > 0.0 ? compute::kHeatmapLossWeight / valid : 0.0) * double(a.loss_scale);
  double acc = 0.0;
  for (int i = threadIdx.x; i < a.plane_size; i += blockDim.x) {
    double grad = 0.0;
    acc += Pixel::term(a.pred[base + i], a.target[base + i], gs, grad);
    if (a.dpred) a.dpred[base + i] = static_cast<float>(grad);
  }
  acc = block_sum(acc, shared);
  if (threadIdx.x == 0) a.sums[plane] = acc;
}

}  // namespace detail

template <class Pixel>
void pixel_loss_planes(const compute::LossPlanes& planes, cudaStream_t stream) {
  if (planes.planes > 0)
    detail::pixel_loss_planes_kernel<Pixel><<<planes.planes, detail::kThreads, 0, stream>>>(planes);
}

}  // namespace trainer::kernels
