#pragma once
// Kernels of the transformer ops (compute/transformer_ops.hpp) other than the
// matrix products, which are cuBLAS calls (src/compute/cuda/cuda_transformer_ops.cpp).
// CPU twins: src/compute/cpu/cpu_transformer_ops.cpp, the same formulas.
// Launchers only enqueue work on `stream`; they never synchronize. Matrices are
// row-major [rows, width]. Reductions over rows run in a fixed order (no atomics).
#include <cuda_runtime_api.h>  // cudaStream_t
#include <cstddef>             // std::size_t
#include <cstdint>             // std::uint16_t

#include "cast.cuh"                  // Format16
#include "compute/hiera_rule.hpp"   // ConvPatchGrid, TokenPoolGrid
#include "compute/window_rule.hpp"  // compute::WindowGrid

namespace trainer::kernels {

// nn.LayerNorm over each row; mean and rstd [rows] kept for the backward. y16 (null:
// none): y's values rounded to `f` too (compute/float16.hpp), the bits cast_to_16 gives.
void layer_norm_forward(const float* x, const float* gamma, const float* beta, float* y, std::uint16_t* y16,
                        Format16 f, float* mean, float* rstd, int rows, int width, float eps, cudaStream_t stream);
// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma.
void layer_norm_backward_input(const float* x, const float* gamma, const float* mean, const float* rstd,
                               const float* dy, float* dx, int rows, int width, cudaStream_t stream);
// Column reductions split their rows into column_reduce_chunks(rows) chunks; with more
// than one, `partials` is column_reduce_scratch_bytes(rows, width) of device memory
// (unused, and may be null, otherwise).
int column_reduce_chunks(int rows);
std::size_t column_reduce_scratch_bytes(int rows, int width);
// dgamma = column sums of dy * xhat, dbeta = column sums of dy.
void layer_norm_backward_params(const float* x, const float* mean, const float* rstd, const float* dy, float* dgamma,
                                float* dbeta, double* partials, int rows, int width, cudaStream_t stream);

// Exact GELU: y = x * Phi(x); dx = dy * (Phi(x) + x * phi(x)). y16 as layer_norm_forward's.
void gelu_forward(const float* x, float* y, std::uint16_t* y16, Format16 f, std::size_t n, cudaStream_t stream);
void gelu_backward(const float* x, const float* dy, float* dx, std::size_t n, cudaStream_t stream);

// Softmax of each row (y may be x); backward dx = y * (dy - sum(dy * y)) (dx may be dy).
void softmax_forward(const float* x, float* y, int rows, int cols, cudaStream_t stream);
void softmax_backward(const float* y, const float* dy, float* dx, int rows, int cols, cudaStream_t stream);

// x[i, j] += bias[j].
void add_row_bias(float* x, const float* bias, int rows, int width, cudaStream_t stream);
// out[j] = sum_i a[i, j] * (b ? b[i, j] : 1).
void column_sums(const float* a, const float* b, float* out, double* partials, int rows, int width,
                 cudaStream_t stream);
// y[i, j] = x[i, j] * gamma[j] (y may be x).
void scale_columns(const float* x, const float* gamma, float* y, int rows, int width, cudaStream_t stream);
// y = a + b (y may be a or b).
void add(const float* a, const float* b, float* y, std::size_t n, cudaStream_t stream);

// out[i * out_stride + c * rows + r] = in[i * in_stride + r * in_ld + c] (TransformerOps::transpose).
void transpose(const float* in, long long in_ld, long long in_stride, float* out, long long out_stride, int batch,
               int rows, int cols, cudaStream_t stream);
// Image patches as rows (TransformerOps::patchify).
void patchify(const float* images, float* patches, int batch, int channels, int height, int width, int patch,
              cudaStream_t stream);
// SAM's window layout and back (TransformerOps::window_partition / _unpartition).
void window_partition(const float* tokens, float* windows, const float* fill, const compute::WindowGrid& g,
                      int width, cudaStream_t stream);
void window_unpartition(const float* windows, float* tokens, const compute::WindowGrid& g, int width,
                        cudaStream_t stream);
// SAM2 Hiera's patch rows and 2x2 token max pooling (TransformerOps::conv_patches,
// max_pool_forward / _backward; the index rules in compute/hiera_rule.hpp).
void conv_patches(const float* images, float* patches, const compute::ConvPatchGrid& g, cudaStream_t stream);
void max_pool_forward(const float* x, float* y, const compute::TokenPoolGrid& g, int width, cudaStream_t stream);
void max_pool_backward(const float* x, const float* dy, float* dx, const compute::TokenPoolGrid& g, int width,
                       cudaStream_t stream);

}  // namespace trainer::kernels
