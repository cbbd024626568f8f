#pragma once
// Batch-norm kernels for the split API of compute::Backend (statistics, finalize,
// apply, backward reduce, backward apply), so synchronized BN can all-reduce the
// per-channel sums between the halves. CPU twins: the batchnorm_* ops in
// src/compute/cpu/. Per-channel sums accumulate in double. gamma, beta, dgamma and
// dbeta may be null (gamma 1, beta 0, gradient not wanted).
#include <cuda_runtime_api.h>  // cudaStream_t
#include <cstddef>             // std::size_t

#include "compute/host_device.hpp"  // TRAINER_HOST_DEVICE

namespace trainer::kernels {

// Which batch-norm kernels run (TRAINER_BN_KERNELS, docs/GPU.md); the same arithmetic
// per value, the per-channel sums added in another fixed order (double sums, rounded
// to float). `tiled`, the default: over 16-bit NHWC (nhwc16.cuh, since 2026-11-27),
// apply and backward apply keep each thread on fixed channels down several rows, the
// channel sums keep four rows' loads in flight, and their splits are added by 32
// threads per channel; over NCHW fp32 (here, since 2026-11-28, not yet run on a GPU),
// each thread keeps one channel and one float4 column down the images, and a block
// covers several small planes (batchnorm_tiles.cuh), where planes hold whole float4s
// and the tensors are 16-byte aligned; and since 2026-11-28 (not yet run on a GPU)
// the 16-bit channel sums of layers wider than 32 lanes (256 channels at eight a
// thread, 32 at one) take blocks of 32 lanes by 8 rows (nhwc16.cu, wide_sum_layout).
// `tiled_lane_rows`: the same, with the 16-bit channel sums laid out as on 2026-11-27
// (up to 256 lanes across a block; TRAINER_BN_WIDE_SUMS=0). `flat`: the kernels an
// H200 ran on 2026-11-27 and 2026-11-28. The last two compute what ran, the same bits,
// though not quite its kernels: since 2026-11-28 every layout's 16-bit sums keep
// their block reduction's shared memory thread-major (no bank conflicts).
enum class BnKernels { tiled, tiled_lane_rows, flat };
inline bool tiled_kernels(BnKernels k) { return k != BnKernels::flat; }

// The per-channel steps between the passes over the activations: folded into the
// kernel before them (BnFinalize and BnParamGrads below, and the 16-bit element
// passes' coefficients; TRAINER_BN_FOLD, docs/GPU.md), or, where a function is given
// none, in their own kernels (batchnorm_finalize, batchnorm_param_grads,
// nhwc16.cu's apply_coefficients_kernel), as an H200 ran them on 2026-11-27 and 28.
// Each of those is a few microseconds over a few thousand values; in Nsight Compute's
// profiles the ones folded away took about 0.6 ms of a bf16 ResNet-50 step's 16.6
// at batch 64 (212 launches; 2026-11-27 evening) and 0.35 ms of fp32's 31.3 at
// batch 16 (106; 2026-11-28). Folded or not, every value is the same: the folded
// kernel computes each channel with the same expressions, in the thread that has
// just computed their inputs.
//
// batchnorm_finalize over this rank alone (no synchronized statistics), in the
// moments' last kernel. Outputs as batchnorm_finalize's; running_mean may be null.
struct BnFinalize {
  float eps = 0.f, momentum = 0.f;
  float* mean = nullptr;
  float* invstd = nullptr;
  float* running_mean = nullptr;
  float* running_var = nullptr;
};
// batchnorm_param_grads from this rank's backward sums, in the sums' last kernel.
// Empty (dgamma and dbeta null) folds nothing.
struct BnParamGrads {
  const float* invstd = nullptr;
  float* dgamma = nullptr;
  float* dbeta = nullptr;
  TRAINER_HOST_DEVICE bool any() const { return dgamma != nullptr || dbeta != nullptr; }
};

// Scratch (in doubles) that batchnorm_stats / batchnorm_backward_reduce / channel_sum need.
std::size_t batchnorm_scratch_doubles(int channels);

// dbias[c] = sum over n, h, w of dy[n, c, h, w] (a transposed convolution's bias
// gradient; overwrites dbias), over the batch norm's split partials: one block per
// channel took 0.26 ms a call for the heatmap head's 17 channels at batch 64 on an
// H200 (2026-11-27), 17 blocks on 132 multiprocessors.
void channel_sum(const float* dy, float* dbias, int n, int c, int plane, BnKernels kernels, double* scratch,
                 cudaStream_t stream);

// out[0..C) = sum x; out[C..2C) = sum x^2 over N, H, W.
void batchnorm_stats(const float* x, int n, int c, int plane, BnKernels kernels, float* out, double* scratch,
                     cudaStream_t stream);
// out[0..C) = sum dy; out[C..2C) = sum dy * (x - mean); and, where `grads` has
// outputs, batchnorm_param_grads from them in the same last kernel.
void batchnorm_backward_reduce(const float* dy, const float* x, const float* mean, int n, int c, int plane,
                               BnKernels kernels, const BnParamGrads& grads, float* out, double* scratch,
                               cudaStream_t stream);
// out = moments in compute/batchnorm_moments.hpp's layout (mean as two floats,
// M2, count). Sums of x - shift and (x - shift)^2 in double, the shift being
// the channel's first value (image 0), so a large mean cancels before squaring.
void batchnorm_moments(const float* x, int n, int c, int plane, BnKernels kernels, float* out, double* scratch,
                       cudaStream_t stream);
// batchnorm_moments, then batchnorm_finalize of these moments alone in the same last
// kernel (`out` is still written).
void batchnorm_local_statistics(const float* x, int n, int c, int plane, BnKernels kernels, const BnFinalize& finalize,
                                float* out, double* scratch, cudaStream_t stream);
// Merges `ranks` blocks of moments (Chan's formula, rank order, double).
void batchnorm_finalize(const float* moments, int ranks, int c, float eps, float momentum,
                        float* mean, float* invstd, float* running_mean, float* running_var,
                        cudaStream_t stream);
void batchnorm_inference_stats(const float* running_mean, const float* running_var, int c,
                               float eps, float* mean, float* invstd, cudaStream_t stream);
void batchnorm_apply(const float* x, const float* mean, const float* invstd, const float* gamma,
                     const float* beta, float* y, int n, int c, int plane, BnKernels kernels, cudaStream_t stream);
void batchnorm_param_grads(const float* reduce, const float* invstd, int c, float* dgamma,
                           float* dbeta, cudaStream_t stream);
void batchnorm_backward_apply(const float* dy, const float* x, const float* mean,
                              const float* invstd, const float* gamma, const float* reduce,
                              double count, float* dx, int n, int c, int plane, BnKernels kernels,
                              cudaStream_t stream);

// Fused with the ReLU (and residual add) that follow a ResNet batch norm; the same
// arithmetic as the separate kernels (compute/batchnorm_apply_rule.hpp).
// y = relu(apply(x) + residual); residual may be null.
void batchnorm_apply_relu(const float* x, const float* mean, const float* invstd, const float* gamma,
                          const float* beta, const float* residual, float* y, int n, int c, int plane,
                          BnKernels kernels, cudaStream_t stream);
// batchnorm_backward_reduce / _apply of dy masked by the ReLU, recomputed from x.
void batchnorm_relu_backward_reduce(const float* dy, const float* x, const float* mean, const float* invstd,
                                    const float* gamma, const float* beta, int n, int c, int plane, BnKernels kernels,
                                    const BnParamGrads& grads, float* out, double* scratch, cudaStream_t stream);
void batchnorm_relu_backward_apply(const float* dy, const float* x, const float* mean, const float* invstd,
                                   const float* gamma, const float* beta, const float* reduce, double count,
                                   float* dx, int n, int c, int plane, BnKernels kernels, cudaStream_t stream);

}  // namespace trainer::kernels
