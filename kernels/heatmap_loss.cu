// The loss-independent stages of the masked heatmap loss; see heatmap_loss.cuh.
#include "heatmap_loss.cuh"

#include "compute/losses/heatmap_loss.hpp"  // kHeatmapLossWeight
#include "pixel_loss_kernel.cuh"            // detail::sum_flags, block_sum, kThreads

namespace trainer::kernels {
namespace {

using detail::block_sum;
using detail::kThreads;
using detail::sum_flags;

// Whether plane i counts: mask != 0, or without a mask a target that is not all
// zero (lightning-pose's own rule).
__device__ inline bool plane_counts(const float* mask, const float* target, int plane, int size) {
  if (mask) return mask[plane] != 0.f;
  const float* t = target + std::size_t(plane) * size;
  for (int i = 0; i < size; ++i)
    if (t[i] != 0.f) return true;
  return false;
}

// One thread per plane.
__global__ void count_planes_kernel(const float* mask, const float* target, int planes, int size,
                                    double* flags) {
  const int plane = blockIdx.x * blockDim.x + threadIdx.x;
  if (plane < planes) flags[plane] = plane_counts(mask, target, plane, size) ? 1.0 : 0.0;
}

__global__ void loss_total_kernel(const double* sums, const double* flags, int planes, float* loss) {
  __shared__ double shared[32];
  double total = 0.0;
  for (int i = threadIdx.x; i < planes; i += blockDim.x) total += sums[i];
  total = block_sum(total, shared);
  const double valid = sum_flags(flags, planes, shared);
  if (threadIdx.x == 0)
    loss[0] = valid > 0.0 ? static_cast<float>(total * (compute::kHeatmapLossWeight / valid)) : 0.f;
}

}  // namespace

std::size_t heatmap_loss_scratch_doubles(int planes) {
  return 2 * std::size_t(planes > 0 ? planes : 1);  // flags and per-plane sums
}

void count_loss_planes(const float* mask, const float* target, int planes, int plane_size,
                       double* flags, cudaStream_t s) {
  if (planes > 0)
    count_planes_kernel<<<(planes + kThreads - 1) / kThreads, kThreads, 0, s>>>(mask, target, planes,
                                                                                 plane_size, flags);
}

void heatmap_loss_total(const double* sums, const double* flags, int planes, float* loss,
                        cudaStream_t s) {
  loss_total_kernel<<<1, kThreads, 0, s>>>(sums, flags, planes, loss);
}

}  // namespace trainer::kernels
