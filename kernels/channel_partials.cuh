#pragma once
// The second pass of the kernels' per-channel sums (batchnorm.cu over NCHW fp32,
// nhwc16.cu over NHWC 16-bit): `splits` double partials per channel, laid out
// partial[(split * c + ch) * 2 + {0, 1}], added in split order (deterministic) into
// out[ch] and out[c + ch]; with `grads` (BnParamGrads, batchnorm.cuh), the batch
// norm's parameter gradients from those two floats too. And the step after the
// moments' sums, a channel's statistics (BnFinalize). Included by .cu files only.
#include <cuda_runtime.h>  // dim3, __syncthreads
#include <cstddef>  // std::size_t

#include "compute/batchnorm_apply_rule.hpp"  // store_param_grads
#include "compute/batchnorm_moments.hpp"     // Moments, merge_moments, finalize_channel
#include "batchnorm.cuh"                     // BnFinalize, BnParamGrads

namespace trainer::kernels {
namespace {

// Channel ch's two sums, stored; and its parameter gradients where `grads` asks.
__device__ inline void store_channel_sums(float* out, int c, int ch, double a, double b, const BnParamGrads& grads) {
  const float sum_g = static_cast<float>(a), sum_g_xmu = static_cast<float>(b);
  out[ch] = sum_g;
  out[c + ch] = sum_g_xmu;
  if (grads.any()) compute::store_param_grads(sum_g, sum_g_xmu, grads.invstd[ch], ch, grads.dgamma, grads.dbeta);
}

// batchnorm_finalize of channel ch over this rank alone, from the moments this
// thread has just stored into `out` (a block of compute/batchnorm_moments.hpp's
// layout) for `count` values: what finalize_kernel reads back from the block.
__device__ inline void finalize_stored_channel(const float* out, int c, int ch, double count, const BnFinalize& f) {
  compute::Moments m;
  compute::merge_moments(m, out, c, ch, static_cast<float>(count));
  compute::finalize_channel(m, ch, f.eps, f.momentum, f.mean, f.invstd, f.running_mean, f.running_var);
}

__global__ void channel_partials_sum_kernel(const double* partial, int c, int splits, float* out,
                                            BnParamGrads grads) {
  const int ch = blockIdx.x * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  double a = 0.0, b = 0.0;
  for (int s = 0; s < splits; ++s) {
    a += partial[(std::size_t(s) * c + ch) * 2 + 0];
    b += partial[(std::size_t(s) * c + ch) * 2 + 1];
  }
  store_channel_sums(out, c, ch, a, b, grads);
}

// The same sums with the splits spread over threads (the tiled kernels, kernels/nhwc16.cu):
// block (32 channels, kSplitLanes lanes); lane y adds splits y, y + kSplitLanes, ... in
// order, then lane 0 adds the lanes in order (fixed, so run to run the same bits). One
// thread per channel walking up to 1,024 splits took 45 us a call on an H200
// (2026-11-27), 17% of a bf16 ResNet-50 step at batch 64 for two such passes per batch norm.
constexpr int kSplitLanes = 32;
inline dim3 split_lanes_grid(int c) { return dim3(static_cast<unsigned>((c + 31) / 32)); }
inline dim3 split_lanes_block() { return dim3(32, kSplitLanes); }

// Every thread of the block calls it (it synchronizes); true in the thread that holds
// channel `ch`'s sums a, b (lane 0).
__device__ inline bool sum_split_lanes(const double* partial, int c, int splits, int& ch, double& a, double& b) {
  __shared__ double lanes[2][kSplitLanes][32];  // [sum][lane][channel]: no bank conflicts
  ch = int(blockIdx.x) * 32 + int(threadIdx.x);
  double sa = 0.0, sb = 0.0;
  if (ch < c) {
#pragma unroll 4
    for (int s = int(threadIdx.y); s < splits; s += kSplitLanes) {
      sa += partial[(std::size_t(s) * c + ch) * 2 + 0];
      sb += partial[(std::size_t(s) * c + ch) * 2 + 1];
    }
  }
  lanes[0][threadIdx.y][threadIdx.x] = sa;
  lanes[1][threadIdx.y][threadIdx.x] = sb;
  __syncthreads();
  if (threadIdx.y != 0 || ch >= c) return false;
  a = b = 0.0;
  for (int l = 0; l < kSplitLanes; ++l) {
    a += lanes[0][l][threadIdx.x];
    b += lanes[1][l][threadIdx.x];
  }
  return true;
}

__global__ void __launch_bounds__(32 * kSplitLanes)
    channel_partials_sum_lanes_kernel(const double* partial, int c, int splits, float* out, BnParamGrads grads) {
  int ch;
  double a, b;
  if (!sum_split_lanes(partial, c, splits, ch, a, b)) return;
  store_channel_sums(out, c, ch, a, b, grads);
}

}  // namespace
}  // namespace trainer::kernels
