#pragma once
// Kernels of the MBConv ops (compute/mbconv_ops.hpp): the EfficientNets' depthwise
// convolutions, SiLU, squeeze-excitation gate and mean, and stochastic depth's row
// scaling. CPU twins: src/compute/cpu/cpu_mbconv_ops.cpp, the same per-element
// formulas (compute/mbconv_rule.hpp). Launchers only enqueue work on `stream`; they
// never synchronize. fp32 NCHW; reductions run in a fixed order (no atomics).
#include <cuda_runtime_api.h>  // cudaStream_t
#include <cstddef>             // std::size_t
#include <cstdint>             // std::uint32_t

#include "compute/depthwise_chunks.hpp"  // compute::DepthwiseWeightChunks

namespace trainer::kernels {

// Depthwise convolution without bias: x [n, c, h, w], w [c, 1, k, k], y [n, c, oh, ow].
void depthwise_forward(const float* x, const float* w, float* y, int n, int c, int h, int wd, int oh, int ow, int k,
                       int stride, int pad, cudaStream_t stream);
// dx [n, c, h, w] from dy [n, c, oh, ow].
void depthwise_backward_data(const float* dy, const float* w, float* dx, int n, int c, int h, int wd, int oh, int ow,
                             int k, int stride, int pad, cudaStream_t stream);
// dw [c, 1, k, k]: one block per (channel, tap), a block-wide sum in double (the
// layout before 2026-11-29; TRAINER_DEPTHWISE_CHUNKS=0, and for k other than 3 and 5).
void depthwise_backward_weights(const float* x, const float* dy, float* dw, int n, int c, int h, int wd, int oh,
                                int ow, int k, int stride, int pad, cudaStream_t stream);

// The same dw in two passes: one block per (channel, chunk of the n * oh output rows)
// sums every tap in double (each dy read once, not k * k times), then one thread per
// filter value adds the chunks' sums in chunk order, so the bits do not depend on
// scheduling. `plan` from compute::depthwise_weight_chunks (k 3 or 5), `partials`
// plan.partials doubles.
void depthwise_backward_weights_chunked(const float* x, const float* dy, float* dw, double* partials,
                                        const compute::DepthwiseWeightChunks& plan, int n, int c, int h, int wd, int oh, int ow,
                                        int k, int stride, int pad, cudaStream_t stream);

void silu_forward(const float* x, float* y, std::size_t count, cudaStream_t stream);
void silu_backward(const float* x, const float* dy, float* dx, std::size_t count, cudaStream_t stream);

// y = x * sigmoid(z[row]) over [rows, width].
void gate_forward(const float* x, const float* z, float* y, int rows, int width, cudaStream_t stream);
// dx = dy * sigmoid(z[row]); dz[row] = sum(dy * x) * s * (1 - s). One block per row.
void gate_backward(const float* x, const float* z, const float* dy, float* dx, float* dz, int rows, int width,
                   cudaStream_t stream);
// out[row] = mean of the row (one block per row); backward adds dmean[row] / width.
void row_mean_forward(const float* x, float* out, int rows, int width, cudaStream_t stream);
void row_mean_backward_add(const float* dmean, float* dx, int rows, int width, cudaStream_t stream);
// y[row, j] = x[row, j] * factors[row].
void scale_rows(const float* x, const float* factors, float* y, int rows, int width, cudaStream_t stream);
// factors[row] = compute::stochastic_depth_factor(key[0], key[1], salt, row, p).
void stochastic_depth_factors(const float* key, std::uint32_t salt, float p, float* factors, int rows,
                              cudaStream_t stream);

}  // namespace trainer::kernels
