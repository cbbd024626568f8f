#pragma once
// BnKernels::tiled over NCHW fp32 (kernels/batchnorm.cu): each thread stays on one
// channel and one column of float4s, and walks down the images (the split of a tensor
// over blocks and threads: compute/channel_tiles.hpp). In an H200 profile of
// ResNet-50 in fp32 at batch 16 (2026-11-28) the flat kernels, one block per image
// plane of one channel with one float per thread, took 2 to 5 times what their bytes
// need at the H200's bandwidth (an estimate from the tensor sizes, not a byte count):
// the 8 x 8 planes of the last stage left three of four threads idle in 32,768 blocks
// a call. Per value the arithmetic is the flat kernels'
// (compute/batchnorm_apply_rule.hpp); the per-channel sums add in another fixed order.
// Included by batchnorm.cu only; the tiles need plane % 4 == 0 and 16-byte aligned
// tensors.
#include <cuda_runtime.h>  // float4, dim3, __syncthreads
#include <cstddef>         // std::size_t

#include "compute/batchnorm_apply_rule.hpp"  // BatchnormAffine, batchnorm_affine_of, relu_masked
#include "compute/channel_tiles.hpp"         // ChannelTiles, tile_position
#include "batchnorm_backward_rule.cuh"       // BackwardApplyRule
#include "launch.cuh"                        // kThreads

namespace trainer::kernels {
namespace {

using compute::ChannelTiles;
static_assert(compute::kTileThreads == detail::kThreads, "the tiles' blocks are the kernels' blocks");

// ---- per-channel sums: the Terms' Channel adds one value (and its second input's) --

struct StatsTile {
  const float* x;
  struct Channel {
    __device__ void add(float v, float, double& a, double& b) const {
      a += v;
      b += double(v) * v;
    }
  };
  __device__ Channel at(int) const { return {}; }
  __device__ const float* first() const { return x; }
  __device__ const float* second() const { return nullptr; }
};

struct SumTile {
  const float* x;
  struct Channel {
    __device__ void add(float v, float, double& a, double&) const { a += v; }
  };
  __device__ Channel at(int) const { return {}; }
  __device__ const float* first() const { return x; }
  __device__ const float* second() const { return nullptr; }
};

// Sums of x - shift and (x - shift)^2, shift = the channel's value at image 0,
// position 0 (as ShiftedStatsTerms; moments_from_partials_kernel adds it back).
struct ShiftedStatsTile {
  const float* x;
  int plane;
  struct Channel {
    double shift;
    __device__ void add(float xv, float, double& a, double& b) const {
      const double v = double(xv) - shift;
      a += v;
      b += v * v;
    }
  };
  __device__ Channel at(int ch) const { return {double(x[std::size_t(ch) * plane])}; }
  __device__ const float* first() const { return x; }
  __device__ const float* second() const { return nullptr; }
};

// first = dy, second = x: sum dy and sum dy * (x - mean).
struct BackwardTile {
  const float* dy;
  const float* x;
  const float* mean;
  struct Channel {
    double mean;
    __device__ void add(float g, float xv, double& a, double& b) const {
      a += g;
      b += double(g) * (double(xv) - mean);
    }
  };
  __device__ Channel at(int ch) const { return {double(mean[ch])}; }
  __device__ const float* first() const { return dy; }
  __device__ const float* second() const { return x; }
};

// BackwardTile of dy masked by the ReLU that followed the batch norm.
struct ReluBackwardTile {
  const float* dy;
  const float* x;
  const float* mean;
  const float* invstd;
  const float* gamma;
  const float* beta;
  struct Channel {
    compute::BatchnormAffine affine;
    double mean;
    __device__ void add(float dyv, float xv, double& a, double& b) const {
      const double g = compute::relu_masked(dyv, xv, affine);
      a += g;
      b += g * (double(xv) - mean);
    }
  };
  __device__ Channel at(int ch) const {
    return {compute::batchnorm_affine_of(mean, invstd, gamma, beta, ch), double(mean[ch])};
  }
  __device__ const float* first() const { return dy; }
  __device__ const float* second() const { return x; }
};

template <typename Channel>
__device__ inline void add4(const Channel& ch, float4 v, float4 w, double& a, double& b) {
  ch.add(v.x, w.x, a, b);
  ch.add(v.y, w.y, a, b);
  ch.add(v.z, w.z, a, b);
  ch.add(v.w, w.w, a, b);
}

// partial[(split * c + ch) * 2 + {0, 1}]: the layout of channel_partials_kernel, so
// the same second passes add them.
template <typename Terms>
__global__ void __launch_bounds__(detail::kThreads)
    tiled_partials_kernel(Terms terms, ChannelTiles t, double* partial) {
  __shared__ double sums[2][detail::kThreads];
  const compute::TilePosition p = compute::tile_position(t, int(blockIdx.x), int(blockIdx.y), int(threadIdx.x));
  const float4* in0 = reinterpret_cast<const float4*>(terms.first());
  const float4* in1 = reinterpret_cast<const float4*>(terms.second());
  double a = 0.0, b = 0.0;
  if (p.active) {
    const auto channel = terms.at(p.ch);
    for (int col = p.col; col < t.plane4; col += p.col_stride) {
#pragma unroll 4
      for (int img = int(blockIdx.y); img < t.n; img += int(gridDim.y)) {
        const std::size_t i = compute::tile_float4_index(t, img, p.ch, col);
        add4(channel, in0[i], in1 ? in1[i] : float4{}, a, b);
      }
    }
  }
  sums[0][threadIdx.x] = a;
  sums[1][threadIdx.x] = b;
  __syncthreads();
  for (int s = compute::tile_reduction_width(t.seg) / 2; s > 0; s /= 2) {
    if (compute::tile_adds_at(t, p, s)) {
      sums[0][threadIdx.x] += sums[0][threadIdx.x + s];
      sums[1][threadIdx.x] += sums[1][threadIdx.x + s];
    }
    __syncthreads();
  }
  if (p.active && p.q == 0) {
    partial[(std::size_t(p.split) * t.c + p.ch) * 2 + 0] = sums[0][threadIdx.x];
    partial[(std::size_t(p.split) * t.c + p.ch) * 2 + 1] = sums[1][threadIdx.x];
  }
}

// ---- element-wise passes: the Op's Channel maps one float4 index --------------------

// y = bn(x), relu(bn(x)) or relu(bn(x) + residual).
template <bool kRelu>
struct ApplyTile {
  const float* x;
  const float* mean;
  const float* invstd;
  const float* gamma;
  const float* beta;
  const float* residual;  // null: none
  float* y;
  struct Channel {
    compute::BatchnormAffine affine;
    const float4* x;
    const float4* residual;
    float4* y;
    __device__ float one(float v, float r) const {
      if (!kRelu) return compute::batchnorm_affine(v, affine);
      return residual ? compute::batchnorm_add_relu(v, affine, r) : compute::batchnorm_relu(v, affine);
    }
    __device__ void operator()(std::size_t i) const {
      const float4 v = x[i];
      const float4 r = residual ? residual[i] : float4{};
      y[i] = float4{one(v.x, r.x), one(v.y, r.y), one(v.z, r.z), one(v.w, r.w)};
    }
  };
  __device__ Channel at(int ch) const {
    return {compute::batchnorm_affine_of(mean, invstd, gamma, beta, ch), reinterpret_cast<const float4*>(x),
            reinterpret_cast<const float4*>(residual), reinterpret_cast<float4*>(y)};
  }
};

// dx of backward_apply_kernel<kRelu>, its per-channel terms computed once per thread.
template <bool kRelu>
struct BackwardApplyTile {
  const float* dy;
  const float* x;
  const float* mean;
  const float* invstd;
  const float* gamma;
  const float* beta;
  const float* reduce;
  double count;
  int c;
  float* dx;
  struct Channel {
    BackwardApplyRule<kRelu> rule;
    const float4* dy;
    const float4* x;
    float4* dx;
    __device__ void operator()(std::size_t i) const {
      const float4 g = dy[i], v = x[i];
      dx[i] = float4{rule(g.x, v.x), rule(g.y, v.y), rule(g.z, v.z), rule(g.w, v.w)};
    }
  };
  __device__ Channel at(int ch) const {
    return {BackwardApplyRule<kRelu>::of(mean, invstd, gamma, beta, reduce, count, c, ch),
            reinterpret_cast<const float4*>(dy), reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(dx)};
  }
};

template <typename Op>
__global__ void __launch_bounds__(detail::kThreads) tiled_elementwise_kernel(Op op, ChannelTiles t) {
  const compute::TilePosition p = compute::tile_position(t, int(blockIdx.x), int(blockIdx.y), int(threadIdx.x));
  if (!p.active) return;
  const auto channel = op.at(p.ch);
  for (int col = p.col; col < t.plane4; col += p.col_stride)
    for (int img = int(blockIdx.y); img < t.n; img += int(gridDim.y))
      channel(compute::tile_float4_index(t, img, p.ch, col));
}

}  // namespace
}  // namespace trainer::kernels
