#pragma once
// Kernels over the backbone's 16-bit NHWC activations (compute/tensor.hpp,
// Storage::bf16_nhwc / f16_nhwc): batch-norm statistics, apply (with the residual
// add and ReLU), backward reduce and apply, max pooling, the ReLU backward and the
// residual gradient add. Each reads 16-bit values exactly, computes in fp32 with
// the arithmetic of the fp32 kernels (compute/batchnorm_apply_rule.hpp, double
// per-channel sums), and rounds what it stores (compute/float16.hpp). A tensor is
// `rows` = N*H*W rows of `c` channels, channels innermost; with c a multiple of 8,
// each thread moves 8 channels in one 16-byte access. Per-channel sums go through
// fixed-order partials, so results are the same run to run.
// CPU twins: the CPU backend's ops on 16-bit views (src/compute/cpu/cpu_storage16.hpp).
#include <cuda_runtime_api.h>  // cudaStream_t
#include <cstddef>             // std::size_t
#include <cstdint>             // std::uint16_t

#include "batchnorm.cuh"  // BnKernels, BnFinalize, BnParamGrads
#include "cast.cuh"       // Format16
#include "pool.cuh"       // PoolShape

namespace trainer::kernels {

// Scratch (in doubles) that the per-channel sums below need.
std::size_t nhwc16_scratch_doubles(std::size_t rows, int c);
// Scratch (in floats) for the per-channel coefficients of apply / backward apply.
std::size_t nhwc16_coefficient_floats(int c);

// out[0..C) = sum x; out[C..2C) = sum x^2 (batchnorm_stats).
void nhwc16_stats(const std::uint16_t* x, std::size_t rows, int c, Format16 f, BnKernels kernels, float* out,
                  double* scratch, cudaStream_t stream);
// Moments in compute/batchnorm_moments.hpp's layout (batchnorm_moments), from sums
// of x - shift and (x - shift)^2, the shift being the channel's value in row 0.
void nhwc16_moments(const std::uint16_t* x, std::size_t rows, int c, Format16 f, BnKernels kernels, float* out,
                    double* scratch, cudaStream_t stream);
// nhwc16_moments, then batchnorm_finalize of these moments alone in the same last
// kernel (batchnorm.cuh's BnFinalize; `out` is still written).
void nhwc16_local_statistics(const std::uint16_t* x, std::size_t rows, int c, Format16 f, BnKernels kernels,
                             const BnFinalize& finalize, float* out, double* scratch, cudaStream_t stream);
// y = bn(x), or with `relu` y = relu(bn(x) + residual) (residual may be null).
// `coefficients` (nhwc16_coefficient_floats) takes the per-channel coefficients,
// computed by their own kernel first, unless `fold` and the tiled kernels: then each
// thread of the element pass computes its channels' (the same values, batchnorm.cuh).
void nhwc16_batchnorm_apply(const std::uint16_t* x, const float* mean, const float* invstd, const float* gamma,
                            const float* beta, const std::uint16_t* residual, bool relu, std::uint16_t* y,
                            std::size_t rows, int c, Format16 f, BnKernels kernels, bool fold, float* coefficients,
                            cudaStream_t stream);
// out[0..C) = sum g; out[C..2C) = sum g * (x - mean), g = dy, or with `relu` dy
// masked by the ReLU that followed the batch norm (recomputed from x); and, where
// `grads` has outputs, batchnorm_param_grads from them in the same last kernel.
void nhwc16_batchnorm_backward_reduce(const std::uint16_t* dy, const std::uint16_t* x, const float* mean,
                                      const float* invstd, const float* gamma, const float* beta, bool relu,
                                      std::size_t rows, int c, Format16 f, BnKernels kernels,
                                      const BnParamGrads& grads, float* out, double* scratch, cudaStream_t stream);
// dx = (g - reduce0/count - (x - mean) invstd^2 reduce1/count) invstd gamma;
// `fold` and `coefficients` as nhwc16_batchnorm_apply's.
void nhwc16_batchnorm_backward_apply(const std::uint16_t* dy, const std::uint16_t* x, const float* mean,
                                     const float* invstd, const float* gamma, const float* beta, const float* reduce,
                                     double count, bool relu, std::uint16_t* dx, std::size_t rows, int c, Format16 f,
                                     BnKernels kernels, bool fold, float* coefficients, cudaStream_t stream);
// Max pooling with pool.cuh's semantics on NHWC tensors.
void nhwc16_maxpool_forward(const std::uint16_t* x, std::uint16_t* y, const PoolShape& p, Format16 f,
                            cudaStream_t stream);
// argmax_scratch: n * oh * ow * c ints, overwritten.
void nhwc16_maxpool_backward(const std::uint16_t* x, const std::uint16_t* dy, std::uint16_t* dx, int* argmax_scratch,
                             const PoolShape& p, Format16 f, cudaStream_t stream);
// dx = y > 0 ? dy : 0 (dx may alias dy); out = out + x. Any layout (element-wise).
void nhwc16_relu_backward(const std::uint16_t* y, const std::uint16_t* dy, std::uint16_t* dx, std::size_t count,
                          Format16 f, cudaStream_t stream);
void nhwc16_accumulate(const std::uint16_t* x, std::uint16_t* out, std::size_t count, Format16 f,
                       cudaStream_t stream);

}  // namespace trainer::kernels
