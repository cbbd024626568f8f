// Batch-norm kernels; see batchnorm.cuh.
#include "batchnorm.cuh"

#include <cmath>  // sqrt
#include <initializer_list>

#include "compute/batchnorm_apply_rule.hpp"  // batchnorm_affine_of, batchnorm_affine, relu_masked
#include "compute/batchnorm_moments.hpp"      // Moments, merge_moments, store_moments, finalize_channel
#include "batchnorm_tiles.cuh"                 // BnKernels::tiled over NCHW fp32
#include "channel_partials.cuh"                // channel_partials_sum_kernel, finalize_stored_channel
#include "launch.cuh"                          // kThreads, block_sum

namespace trainer::kernels {
namespace {

using detail::kThreads;

// BnKernels::flat: each channel's sum is split over up to kFlatSplits blocks along
// the batch (grid (C, splits)), one image plane of one channel at a time. Each block
// writes two double partial sums.
constexpr int kFlatSplits = 32;

inline int splits_for(int n) { return n < kFlatSplits ? (n > 0 ? n : 1) : kFlatSplits; }

// BnKernels::tiled (batchnorm_tiles.cuh) where its float4 accesses fit: whole float4s
// per plane, every tensor 16-byte aligned; elsewhere the flat kernels.
inline bool tiles_fit(BnKernels kernels, int plane, std::initializer_list<const void*> tensors) {
  if (!tiled_kernels(kernels) || plane <= 0 || plane % 4) return false;
  for (const void* p : tensors)
    if (p && !detail::aligned16(p)) return false;
  return true;
}
// Sums about twice, element-wise passes about four times the blocks an H200 holds at
// once (132 multiprocessors, 8 blocks of 256 threads each).
inline ChannelTiles sum_tiles(int n, int c, int plane) {
  return compute::make_channel_tiles(n, c, plane, /*target_blocks=*/2048, /*min_loads=*/4, /*for_sums=*/true);
}
template <typename Op>
void tiled_elementwise(Op op, int n, int c, int plane, cudaStream_t s) {
  const ChannelTiles t =
      compute::make_channel_tiles(n, c, plane, /*target_blocks=*/4096, /*min_loads=*/1, /*for_sums=*/false);
  tiled_elementwise_kernel<<<dim3(t.grid_x(), t.grid_y()), kThreads, 0, s>>>(op, t);
}

// Planes (n, c) of an NCHW tensor as grid.x, chunks of one plane as grid.y.
inline dim3 plane_grid(int n, int c, int plane) {
  int chunks = (plane + kThreads - 1) / kThreads;
  if (chunks > 64) chunks = 64;
  return dim3(static_cast<unsigned int>(n) * c, chunks < 1 ? 1 : chunks);
}

struct StatsTerms {
  const float* x;
  __device__ void operator()(std::size_t idx, int /*c*/, double& a, double& b) const {
    const double v = x[idx];
    a += v;
    b += v * v;
  }
};

// Plain sums of x (a transposed convolution's bias gradient); b stays 0.
struct SumTerms {
  const float* x;
  __device__ void operator()(std::size_t idx, int /*c*/, double& a, double& /*b*/) const { a += x[idx]; }
};

// Sums of x - shift and (x - shift)^2, shift = the channel's value at image 0,
// position 0 (within a few standard deviations of the mean, so nothing cancels).
struct ShiftedStatsTerms {
  const float* x;
  int plane;
  __device__ void operator()(std::size_t idx, int c, double& a, double& b) const {
    const double v = double(x[idx]) - double(x[std::size_t(c) * plane]);
    a += v;
    b += v * v;
  }
};

struct BackwardTerms {
  const float* dy;
  const float* x;
  const float* mean;
  __device__ void operator()(std::size_t idx, int c, double& a, double& b) const {
    const double g = dy[idx];
    a += g;
    b += g * (double(x[idx]) - double(mean[c]));
  }
};

// BackwardTerms of dy masked by the ReLU that followed the batch norm, the mask
// recomputed from x (compute/batchnorm_apply_rule.hpp).
struct ReluBackwardTerms {
  const float* dy;
  const float* x;
  const float* mean;
  const float* invstd;
  const float* gamma;
  const float* beta;
  __device__ void operator()(std::size_t idx, int c, double& a, double& b) const {
    const compute::BatchnormAffine affine = compute::batchnorm_affine_of(mean, invstd, gamma, beta, c);
    const float xv = x[idx];
    const double g = compute::relu_masked(dy[idx], xv, affine);
    a += g;
    b += g * (double(xv) - double(mean[c]));
  }
};

// grid (C, splits): partial[(split * C + c) * 2 + {0,1}]; block `split` takes the
// images split, split + splits, ...
template <typename Terms>
__global__ void channel_partials_kernel(Terms terms, int n, int c, int plane, double* partial) {
  __shared__ double shared[32];
  const int ch = blockIdx.x, split = blockIdx.y, splits = gridDim.y;
  double a = 0.0, b = 0.0;
  for (int img = split; img < n; img += splits) {
    const std::size_t base = (std::size_t(img) * c + ch) * plane;
    for (int i = threadIdx.x; i < plane; i += blockDim.x) terms(base + i, ch, a, b);
  }
  a = detail::block_sum(a, shared);
  b = detail::block_sum(b, shared);
  if (threadIdx.x == 0) {
    partial[(std::size_t(split) * c + ch) * 2 + 0] = a;
    partial[(std::size_t(split) * c + ch) * 2 + 1] = b;
  }
}

// Writes each channel's partial sums with the chosen kernels; returns how many splits.
template <typename Terms, typename Tile>
int channel_partials(Terms terms, Tile tile, bool tiled, int n, int c, int plane, double* scratch, cudaStream_t s) {
  if (tiled) {
    const ChannelTiles t = sum_tiles(n, c, plane);
    tiled_partials_kernel<<<dim3(t.grid_x(), t.grid_y()), kThreads, 0, s>>>(tile, t, scratch);
    return t.splits();
  }
  const int splits = splits_for(n);
  channel_partials_kernel<<<dim3(c, splits), kThreads, 0, s>>>(terms, n, c, plane, scratch);
  return splits;
}

template <typename Terms, typename Tile>
void channel_sums(Terms terms, Tile tile, bool tiled, int n, int c, int plane, const BnParamGrads& grads, float* out,
                  double* scratch, cudaStream_t s) {
  if (c <= 0) return;
  const int splits = channel_partials(terms, tile, tiled, n, c, plane, scratch, s);
  channel_partials_sum_kernel<<<(c + kThreads - 1) / kThreads, kThreads, 0, s>>>(scratch, c, splits, out, grads);
}

// out[ch] = the first of each channel's partial sums, added in split order.
__global__ void first_sums_kernel(const double* partial, int c, int splits, float* out) {
  const int ch = blockIdx.x * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  double a = 0.0;
  for (int s = 0; s < splits; ++s) a += partial[(std::size_t(s) * c + ch) * 2];
  out[ch] = static_cast<float>(a);
}

// Per channel: mean = shift + a / count, M2 = b - a^2 / count from the shifted
// partial sums; thread 0 also writes the count. With `finalize` (its mean set), the
// channel's statistics from these moments alone, as finalize_kernel reads them back.
__global__ void moments_from_partials_kernel(const float* x, const double* partial, int c, int splits,
                                             int plane, double count, float* out, BnFinalize finalize) {
  const int ch = blockIdx.x * blockDim.x + threadIdx.x;
  if (ch == 0) out[3 * c] = static_cast<float>(count);
  if (ch >= c) return;
  double a = 0.0, b = 0.0;
  for (int s = 0; s < splits; ++s) {
    a += partial[(std::size_t(s) * c + ch) * 2 + 0];
    b += partial[(std::size_t(s) * c + ch) * 2 + 1];
  }
  if (count <= 0.0) {
    compute::store_moments(out, c, ch, 0.0, 0.0);
  } else {
    const double m2 = b - a * a / count;
    compute::store_moments(out, c, ch, double(x[std::size_t(ch) * plane]) + a / count, m2 > 0.0 ? m2 : 0.0);
  }
  if (finalize.mean) finalize_stored_channel(out, c, ch, count, finalize);
}

__global__ void finalize_kernel(const float* moments, int ranks, int c, float eps, float momentum,
                                float* mean, float* invstd, float* running_mean, float* running_var) {
  const int ch = blockIdx.x * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  const std::size_t block = compute::batchnorm_moments_size(c);
  compute::Moments m;
  for (int r = 0; r < ranks; ++r) compute::merge_moments(m, moments + std::size_t(r) * block, c, ch);
  compute::finalize_channel(m, ch, eps, momentum, mean, invstd, running_mean, running_var);
}

__global__ void inference_stats_kernel(const float* running_mean, const float* running_var, int c,
                                       float eps, float* mean, float* invstd) {
  const int ch = blockIdx.x * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  mean[ch] = running_mean[ch];
  invstd[ch] = static_cast<float>(1.0 / sqrt(double(running_var[ch]) + double(eps)));
}

// y = x * a + b with a = invstd * gamma, b = beta - mean * a (the CPU twin's
// arithmetic, one FMA here: compute/batchnorm_apply_rule.hpp); gamma / beta may be
// null (1 and 0).
__global__ void apply_kernel(const float* x, const float* mean, const float* invstd,
                             const float* gamma, const float* beta, float* y, int c, int plane) {
  const compute::BatchnormAffine a = compute::batchnorm_affine_of(mean, invstd, gamma, beta, blockIdx.x % c);
  const std::size_t base = std::size_t(blockIdx.x) * plane;
  for (int i = blockIdx.y * blockDim.x + threadIdx.x; i < plane; i += gridDim.y * blockDim.x)
    y[base + i] = compute::batchnorm_affine(x[base + i], a);
}

// relu(apply + residual) in one pass; residual may be null.
__global__ void apply_relu_kernel(const float* x, const float* mean, const float* invstd, const float* gamma,
                                  const float* beta, const float* residual, float* y, int c, int plane) {
  const compute::BatchnormAffine a = compute::batchnorm_affine_of(mean, invstd, gamma, beta, blockIdx.x % c);
  const std::size_t base = std::size_t(blockIdx.x) * plane;
  for (int i = blockIdx.y * blockDim.x + threadIdx.x; i < plane; i += gridDim.y * blockDim.x)
    y[base + i] = residual ? compute::batchnorm_add_relu(x[base + i], a, residual[base + i])
                           : compute::batchnorm_relu(x[base + i], a);
}

__global__ void param_grads_kernel(const float* reduce, const float* invstd, int c, float* dgamma,
                                   float* dbeta) {
  const int ch = blockIdx.x * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  if (dgamma) dgamma[ch] = reduce[c + ch] * invstd[ch];
  if (dbeta) dbeta[ch] = reduce[ch];
}

// BackwardApplyRule<kRelu> (batchnorm_backward_rule.cuh) over one image plane of one channel.
template <bool kRelu>
__global__ void backward_apply_kernel(const float* dy, const float* x, const float* mean,
                                      const float* invstd, const float* gamma, const float* beta,
                                      const float* reduce, double count, float* dx, int c, int plane) {
  const auto rule = BackwardApplyRule<kRelu>::of(mean, invstd, gamma, beta, reduce, count, c, int(blockIdx.x % c));
  const std::size_t base = std::size_t(blockIdx.x) * plane;
  for (int i = blockIdx.y * blockDim.x + threadIdx.x; i < plane; i += gridDim.y * blockDim.x)
    dx[base + i] = rule(dy[base + i], x[base + i]);
}

}  // namespace

std::size_t batchnorm_scratch_doubles(int channels) {
  return std::size_t(channels) * 2 * (kFlatSplits > compute::kTiledSplits ? kFlatSplits : compute::kTiledSplits);
}

void batchnorm_stats(const float* x, int n, int c, int plane, BnKernels kernels, float* out, double* scratch,
                     cudaStream_t s) {
  channel_sums(StatsTerms{x}, StatsTile{x}, tiles_fit(kernels, plane, {x}), n, c, plane, BnParamGrads{}, out, scratch,
               s);
}

void channel_sum(const float* dy, float* dbias, int n, int c, int plane, BnKernels kernels, double* scratch,
                 cudaStream_t s) {
  if (c <= 0) return;
  if (n <= 0 || plane <= 0) {
    cudaMemsetAsync(dbias, 0, std::size_t(c) * sizeof(float), s);
    return;
  }
  const int splits = channel_partials(SumTerms{dy}, SumTile{dy}, tiles_fit(kernels, plane, {dy}), n, c, plane,
                                      scratch, s);
  first_sums_kernel<<<(c + kThreads - 1) / kThreads, kThreads, 0, s>>>(scratch, c, splits, dbias);
}

void batchnorm_backward_reduce(const float* dy, const float* x, const float* mean, int n, int c, int plane,
                               BnKernels kernels, const BnParamGrads& grads, float* out, double* scratch,
                               cudaStream_t s) {
  channel_sums(BackwardTerms{dy, x, mean}, BackwardTile{dy, x, mean}, tiles_fit(kernels, plane, {dy, x}), n, c,
               plane, grads, out, scratch, s);
}

void batchnorm_relu_backward_reduce(const float* dy, const float* x, const float* mean, const float* invstd,
                                    const float* gamma, const float* beta, int n, int c, int plane, BnKernels kernels,
                                    const BnParamGrads& grads, float* out, double* scratch, cudaStream_t s) {
  channel_sums(ReluBackwardTerms{dy, x, mean, invstd, gamma, beta},
               ReluBackwardTile{dy, x, mean, invstd, gamma, beta}, tiles_fit(kernels, plane, {dy, x}), n, c, plane,
               grads, out, scratch, s);
}

void batchnorm_moments(const float* x, int n, int c, int plane, BnKernels kernels, float* out, double* scratch,
                       cudaStream_t s) {
  batchnorm_local_statistics(x, n, c, plane, kernels, BnFinalize{}, out, scratch, s);
}

void batchnorm_local_statistics(const float* x, int n, int c, int plane, BnKernels kernels, const BnFinalize& finalize,
                                float* out, double* scratch, cudaStream_t s) {
  int splits = 0;
  if (c > 0 && n > 0)
    splits = channel_partials(ShiftedStatsTerms{x, plane}, ShiftedStatsTile{x, plane},
                              tiles_fit(kernels, plane, {x}), n, c, plane, scratch, s);
  moments_from_partials_kernel<<<(c + kThreads) / kThreads, kThreads, 0, s>>>(x, scratch, c, splits, plane,
                                                                              double(n) * plane, out, finalize);
}

void batchnorm_finalize(const float* moments, int ranks, int c, float eps, float momentum,
                        float* mean, float* invstd, float* running_mean, float* running_var,
                        cudaStream_t s) {
  if (c > 0)
    finalize_kernel<<<(c + kThreads - 1) / kThreads, kThreads, 0, s>>>(
        moments, ranks, c, eps, momentum, mean, invstd, running_mean, running_var);
}

void batchnorm_inference_stats(const float* running_mean, const float* running_var, int c,
                               float eps, float* mean, float* invstd, cudaStream_t s) {
  if (c > 0)
    inference_stats_kernel<<<(c + kThreads - 1) / kThreads, kThreads, 0, s>>>(
        running_mean, running_var, c, eps, mean, invstd);
}

void batchnorm_param_grads(const float* reduce, const float* invstd, int c, float* dgamma,
                           float* dbeta, cudaStream_t s) {
  if (c > 0)
    param_grads_kernel<<<(c + kThreads - 1) / kThreads, kThreads, 0, s>>>(reduce, invstd, c,
                                                                           dgamma, dbeta);
}

void batchnorm_apply(const float* x, const float* mean, const float* invstd, const float* gamma,
                     const float* beta, float* y, int n, int c, int plane, BnKernels kernels, cudaStream_t s) {
  if (!(std::size_t(n) * c * plane)) return;
  if (tiles_fit(kernels, plane, {x, y})) {
    tiled_elementwise(ApplyTile<false>{x, mean, invstd, gamma, beta, nullptr, y}, n, c, plane, s);
    return;
  }
  apply_kernel<<<plane_grid(n, c, plane), kThreads, 0, s>>>(x, mean, invstd, gamma, beta, y, c, plane);
}

void batchnorm_apply_relu(const float* x, const float* mean, const float* invstd, const float* gamma,
                          const float* beta, const float* residual, float* y, int n, int c, int plane,
                          BnKernels kernels, cudaStream_t s) {
  if (!(std::size_t(n) * c * plane)) return;
  if (tiles_fit(kernels, plane, {x, residual, y})) {
    tiled_elementwise(ApplyTile<true>{x, mean, invstd, gamma, beta, residual, y}, n, c, plane, s);
    return;
  }
  apply_relu_kernel<<<plane_grid(n, c, plane), kThreads, 0, s>>>(x, mean, invstd, gamma, beta, residual, y, c,
                                                                 plane);
}

void batchnorm_backward_apply(const float* dy, const float* x, const float* mean, const float* invstd,
                              const float* gamma, const float* reduce, double count, float* dx, int n, int c,
                              int plane, BnKernels kernels, cudaStream_t s) {
  if (!(std::size_t(n) * c * plane)) return;
  if (tiles_fit(kernels, plane, {dy, x, dx})) {
    tiled_elementwise(BackwardApplyTile<false>{dy, x, mean, invstd, gamma, nullptr, reduce, count, c, dx}, n, c,
                      plane, s);
    return;
  }
  backward_apply_kernel<false><<<plane_grid(n, c, plane), kThreads, 0, s>>>(dy, x, mean, invstd, gamma, nullptr,
                                                                            reduce, count, dx, c, plane);
}

void batchnorm_relu_backward_apply(const float* dy, const float* x, const float* mean, const float* invstd,
                                   const float* gamma, const float* beta, const float* reduce, double count,
                                   float* dx, int n, int c, int plane, BnKernels kernels, cudaStream_t s) {
  if (!(std::size_t(n) * c * plane)) return;
  if (tiles_fit(kernels, plane, {dy, x, dx})) {
    tiled_elementwise(BackwardApplyTile<true>{dy, x, mean, invstd, gamma, beta, reduce, count, c, dx}, n, c, plane, s);
    return;
  }
  backward_apply_kernel<true><<<plane_grid(n, c, plane), kThreads, 0, s>>>(dy, x, mean, invstd, gamma, beta,
                                                                           reduce, count, dx, c, plane);
}

}  // namespace trainer::kernels
