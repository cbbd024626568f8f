// TransformerOps on CUDA (see cuda_transformer_ops.hpp).
#include "compute/cuda/cuda_transformer_ops.hpp"

#include <algorithm>  // std::max
#include <string>  // std::to_string

#include <cublas_v2.h>  // cublasGemmStridedBatchedEx

#include "cast.cuh"                      // kernels::cast_to_16, cast_rows_to_16
#include "compute/cuda/attention_graphs.hpp"  // AttentionGraphCache (the unique_ptr's destructor)
#include "compute/cuda/cuda_check.hpp"   // CUBLAS_CHECK, CUDA_CHECK_LAUNCH
#include "compute/cuda/cuda_stream.hpp"  // as_cuda
#include "compute/cuda/lt_bias_gemm.hpp"  // LtBiasGemm
#include "compute/cuda/scratch_carve.hpp"  // ScratchCarve
#include "compute/rotary_shape_check.hpp"  // check_rotary_shape, check_rotary_table_shape
#include "rotary.cuh"                    // kernels::rotary, rotary_tables
#include "transformer.cuh"               // kernels::layer_norm_forward, ...
#include "util/error.hpp"                // SystemError

namespace trainer::compute::cuda {

namespace {

// The double partials of a column reduction split into row chunks (null when one
// chunk does it): the stream's scratch, for this op alone.
double* column_partials(int rows, int width, Stream& s) {
  const std::size_t bytes = kernels::column_reduce_scratch_bytes(rows, width);
  return bytes ? static_cast<double*>(as_cuda(s).scratch(bytes)) : nullptr;
}

kernels::Format16 format16_of(Precision autocast) {
  return autocast == Precision::fp16 ? kernels::Format16::fp16 : kernels::Format16::bf16;
}

// The format a producer writes its 16-bit copy in (none is asked in fp32).
kernels::Format16 copy_format(const std::uint16_t* y16, Precision autocast) {
  if (y16 && autocast == Precision::fp32)
    throw SystemError("internal error: a 16-bit activation copy asked for in fp32");
  return format16_of(autocast);
}

}  // namespace

CudaTransformerOps::CudaTransformerOps(bool allow_tf32, Precision precision, bool bias_epilogue)
    : TransformerOps(precision), allow_tf32_(allow_tf32), bias_epilogue_(bias_epilogue) {}
CudaTransformerOps::~CudaTransformerOps() = default;

cublasHandle_t CudaTransformerOps::cublas_on(Stream& s) {
  if (!cublas_) {
    cublas_ = std::make_unique<CublasHandle>();
    CUBLAS_CHECK(cublasSetPointerMode(*cublas_, CUBLAS_POINTER_MODE_HOST));
  }
  CUBLAS_CHECK(cublasSetStream(*cublas_, as_cuda(s).get()));
  return *cublas_;
}

// cuBLAS is column-major: a row-major C = op(A) op(B) is the column-major
// C^T = op(B)^T op(A)^T, i.e. the same call with the operands swapped and m, n
// exchanged; each stored matrix is its own transpose in the other order.
void CudaTransformerOps::matmul(const MatmulShape& g, const float* a, const float* b, float* c, Stream& s) {
  matmul_with_copies(g, a, nullptr, b, nullptr, c, s);
}

void CudaTransformerOps::matmul_with_copies(const MatmulShape& g, const float* a, const std::uint16_t* a16,
                                            const float* b, const std::uint16_t* b16, float* c, Stream& s) {
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0)
    throw SystemError("internal error: matmul [" + std::to_string(g.m) + " x " + std::to_string(g.k) + "] * [" +
                      std::to_string(g.k) + " x " + std::to_string(g.n) + "] x " + std::to_string(g.batch));
  if (g.autocast && autocast_precision() != Precision::fp32) {
    // One carve of the stream's scratch for the operands that come without a copy
    // (the weights are cast on every call: no 16-bit weight copy is kept between calls).
    const std::size_t span_a = matmul_span_a(g), span_b = matmul_span_b(g);
    constexpr std::size_t h = sizeof(std::uint16_t);
    ScratchCarve carve(as_cuda(s), {a16 ? 0 : span_a * h, b16 ? 0 : span_b * h});
    gemm16(g, copy_or_cast(a, a16, carve.as<std::uint16_t>(0), span_a, s),
           copy_or_cast(b, b16, carve.as<std::uint16_t>(1), span_b, s), c, s);
    return;
  }
  cublasHandle_t h = cublas_on(s);
  const cublasOperation_t op_a = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasComputeType_t compute = allow_tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, op_b, op_a, g.n, g.m, g.k, &g.alpha, b, CUDA_R_32F, int(g.ldb),
                                          g.stride_b, a, CUDA_R_32F, int(g.lda), g.stride_a, &g.beta, c, CUDA_R_32F,
                                          int(g.ldc), g.stride_c, g.batch, compute, CUBLAS_GEMM_DEFAULT));
}

bool CudaTransformerOps::lt_linear(const MatmulShape& g, const void* a, const void* b, float* y, const float* bias,
                                   void* workspace, Stream& s) {
  if (!lt_) lt_ = std::make_unique<LtBiasGemm>();
  const Precision p = autocast_precision();
  if (p == Precision::fp32)
    return lt_->run(g, a, b, CUDA_R_32F, allow_tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, y, bias,
                    workspace, as_cuda(s).get());
  return lt_->run(g, a, b, p == Precision::fp16 ? CUDA_R_16F : CUDA_R_16BF, CUBLAS_COMPUTE_32F, y, bias, workspace,
                  as_cuda(s).get());
}

std::string CudaTransformerOps::bias_epilogue_note() const { return lt_ ? lt_->note() : std::string(); }

void CudaTransformerOps::linear_forward(const float* x, const std::uint16_t* x16, const float* w, const float* bias,
                                        float* y, int rows, int in, int out, Stream& s) {
  if (!bias_epilogue_ || !bias) return TransformerOps::linear_forward(x, x16, w, bias, y, rows, in, out, s);
  const MatmulShape g = linear_products(rows, in, out).y;
  if (autocast_precision() == Precision::fp32) {
    ScratchCarve carve(as_cuda(s), {LtBiasGemm::kWorkspaceBytes});
    if (!lt_linear(g, x, w, y, bias, carve.as<void>(0), s))
      TransformerOps::linear_forward(x, x16, w, bias, y, rows, in, out, s);
    return;
  }
  // The operands as matmul_with_copies makes them, and the workspace, in one carve.
  const std::size_t span_a = matmul_span_a(g), span_b = matmul_span_b(g);
  constexpr std::size_t h = sizeof(std::uint16_t);
  ScratchCarve carve(as_cuda(s), {x16 ? 0 : span_a * h, span_b * h, LtBiasGemm::kWorkspaceBytes});
  const std::uint16_t* a16 = copy_or_cast(x, x16, carve.as<std::uint16_t>(0), span_a, s);
  const std::uint16_t* w16 = copy_or_cast(w, nullptr, carve.as<std::uint16_t>(1), span_b, s);
  if (lt_linear(g, a16, w16, y, bias, carve.as<void>(2), s)) return;
  gemm16(g, a16, w16, y, s);
  add_bias(y, bias, rows, out, s);  // fp32, as the generic Linear
}

void CudaTransformerOps::linear_backward(const float* x, const std::uint16_t* x16, const float* w, const float* dy,
                                         float* dx, float* dw, float* dbias, int rows, int in, int out, Stream& s) {
  if (autocast_precision() == Precision::fp32)
    return TransformerOps::linear_backward(x, x16, w, dy, dx, dw, dbias, rows, in, out, s);
  const LinearProducts p = linear_products(rows, in, out);
  // dy is the first operand of both products, read over the same span.
  const std::size_t dy_span = matmul_span_a(p.dw), x_span = matmul_span_b(p.dw), w_span = matmul_span_b(p.dx);
  constexpr std::size_t h = sizeof(std::uint16_t);
  ScratchCarve carve(as_cuda(s), {dy_span * h, x16 ? 0 : x_span * h, dx ? w_span * h : 0});
  auto* dy16 = carve.as<std::uint16_t>(0);
  auto* w16 = carve.as<std::uint16_t>(2);
  cast16(dy, dy16, dy_span, s);
  if (dx) {
    cast16(w, w16, w_span, s);
    gemm16(p.dx, dy16, w16, dx, s);
  }
  gemm16(p.dw, dy16, copy_or_cast(x, x16, carve.as<std::uint16_t>(1), x_span, s), dw, s);
  if (dbias) column_sums(dy, dbias, rows, out, s);  // from the unrounded fp32 dy, as the generic Linear
}

void CudaTransformerOps::linears_forward(const float* x, const std::uint16_t* x16, const SharedInputLinear* layers,
                                         int count, int rows, int in, Stream& s) {
  if (autocast_precision() == Precision::fp32)
    return TransformerOps::linears_forward(x, x16, layers, count, rows, in, s);
  std::size_t w_span = 0;
  for (int i = 0; i < count; ++i) w_span = std::max(w_span, matmul_span_b(linear_products(rows, in, layers[i].out).y));
  const std::size_t x_span = std::size_t(rows) * in;
  constexpr std::size_t h = sizeof(std::uint16_t);
  bool any_bias = false;
  for (int i = 0; i < count; ++i) any_bias = any_bias || layers[i].bias;
  const std::size_t workspace = bias_epilogue_ && any_bias ? LtBiasGemm::kWorkspaceBytes : 0;
  ScratchCarve carve(as_cuda(s), {x16 ? 0 : x_span * h, w_span * h, workspace});
  auto* w16 = carve.as<std::uint16_t>(1);  // each layer's in turn (stream order)
  x16 = copy_or_cast(x, x16, carve.as<std::uint16_t>(0), x_span, s);
  for (int i = 0; i < count; ++i) {
    const SharedInputLinear& l = layers[i];
    const MatmulShape y = linear_products(rows, in, l.out).y;
    cast16(l.w, w16, matmul_span_b(y), s);
    if (workspace && l.bias && lt_linear(y, x16, w16, l.y, l.bias, carve.as<void>(2), s)) continue;
    gemm16(y, x16, w16, l.y, s);
    if (l.bias) add_bias(l.y, l.bias, rows, l.out, s);  // fp32, as the generic Linear
  }
}

void CudaTransformerOps::linears_backward(const float* x, const std::uint16_t* x16, const SharedInputLinear* layers,
                                          int count, float* dx, int rows, int in, Stream& s) {
  if (autocast_precision() == Precision::fp32)
    return TransformerOps::linears_backward(x, x16, layers, count, dx, rows, in, s);
  std::size_t dy_span = 0, w_span = 0;
  for (int i = 0; i < count; ++i) {
    const LinearProducts p = linear_products(rows, in, layers[i].out);
    dy_span = std::max(dy_span, matmul_span_a(p.dw));
    w_span = std::max(w_span, matmul_span_b(p.dx));
  }
  const std::size_t x_span = std::size_t(rows) * in;
  constexpr std::size_t h = sizeof(std::uint16_t);
  ScratchCarve carve(as_cuda(s), {x16 ? 0 : x_span * h, dy_span * h, dx ? w_span * h : 0});
  auto* dy16 = carve.as<std::uint16_t>(1);  // each layer's in turn (stream order)
  auto* w16 = carve.as<std::uint16_t>(2);
  x16 = copy_or_cast(x, x16, carve.as<std::uint16_t>(0), x_span, s);
  for (int i = 0; i < count; ++i) {
    const SharedInputLinear& l = layers[i];
    LinearProducts p = linear_products(rows, in, l.out);
    cast16(l.dy, dy16, matmul_span_a(p.dw), s);
    if (dx) {
      cast16(l.w, w16, matmul_span_b(p.dx), s);
      p.dx.beta = i == 0 ? 0.f : 1.f;  // the first writes dx, the others add
      gemm16(p.dx, dy16, w16, dx, s);
    }
    gemm16(p.dw, dy16, x16, l.dw, s);
  }
  // The bias gradients last: column_sums takes the stream's scratch, where the copies live.
  for (int i = 0; i < count; ++i)
    if (layers[i].dbias) column_sums(layers[i].dy, layers[i].dbias, rows, layers[i].out, s);
}

void CudaTransformerOps::gemm16(const MatmulShape& g, const std::uint16_t* a, const std::uint16_t* b, float* c,
                                Stream& s) {
  const cudaDataType_t type = autocast_precision() == Precision::fp16 ? CUDA_R_16F : CUDA_R_16BF;
  cublasHandle_t h = cublas_on(s);
  const cublasOperation_t op_a = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  // The same column-major swap as matmul; 16-bit inputs, fp32 output and compute.
  CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, op_b, op_a, g.n, g.m, g.k, &g.alpha, b, type, int(g.ldb), g.stride_b, a,
                                          type, int(g.lda), g.stride_a, &g.beta, c, CUDA_R_32F, int(g.ldc),
                                          g.stride_c, g.batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

const std::uint16_t* CudaTransformerOps::copy_or_cast(const float* src, const std::uint16_t* copy,
                                                     std::uint16_t* scratch, std::size_t count, Stream& s) {
  if (copy) return copy;
  cast16(src, scratch, count, s);
  return scratch;
}

void CudaTransformerOps::cast16_rows(const float* src, std::uint16_t* dst, long long rows, int cols, long long dst_ld,
                                     Stream& s) {
  kernels::cast_rows_to_16(src, cols, dst, dst_ld, rows, cols, format16_of(autocast_precision()), as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaTransformerOps::cast16(const float* src, std::uint16_t* dst, std::size_t count, Stream& s) {
  const auto format = format16_of(autocast_precision());
  // cast.cu's same-layout cast walks the flat range with size_t indices; Dims4's int
  // extents only name it, so a count past 2^31 is split over n.
  constexpr std::size_t kChunk = std::size_t(1) << 30;
  for (std::size_t done = 0; done < count; done += kChunk) {
    const std::size_t part = count - done < kChunk ? count - done : kChunk;
    kernels::cast_to_16(src + done, dst + done, {1, 1, 1, int(part)}, format, /*nhwc=*/false,
                        as_cuda(s).get());
  }
  CUDA_CHECK_LAUNCH();
}

void CudaTransformerOps::attention_forward(const float* q, const float* k, const float* v, float* probs, float* out,
                                           const AttentionShape& a, Stream& s) {
  if (autocast_precision() == Precision::fp32) return attention_forward32(q, k, v, probs, out, a, s);
  StatePath path;
  path.fused = fused_attention_ready(a);
  path.copies = path.fused && activation_copies();
  fused_state_[probs] = path;
  if (path.fused) return attention_forward_fused(q, k, v, probs, out, a, path.copies, s);
  attention_forward16(q, k, v, probs, out, a, s);
}

void CudaTransformerOps::attention_backward(const float* q, const float* k, const float* v, const float* probs,
                                            const float* out, const float* dout, float* dq, float* dk, float* dv,
                                            float* /*scratch: each GPU path carves its own*/, const AttentionShape& a,
                                            Stream& s) {
  if (autocast_precision() == Precision::fp32) return attention_backward32(q, k, v, probs, dout, dq, dk, dv, a, s);
  if (const StatePath path = state_path(probs, a); path.fused)
    return attention_backward_fused(q, k, v, probs, out, dout, dq, dk, dv, a, path.copies, s);
  attention_backward16(q, k, v, probs, dout, dq, dk, dv, a, s);
}

void CudaTransformerOps::layer_norm_forward(const float* x, const float* gamma, const float* beta, float* y,
                                            std::uint16_t* y16, float* mean, float* rstd, int rows, int width,
                                            float eps, Stream& s) {
  kernels::layer_norm_forward(x, gamma, beta, y, y16, copy_format(y16, autocast_precision()), mean, rstd, rows,
                              width, eps, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaTransformerOps::layer_norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd,
                                             const float* dy, float* dx, float* dgamma, float* dbeta, int rows,
                                             int width, Stream& s) {
  const cudaStream_t stream = as_cuda(s).get();
  kernels::layer_norm_backward_params(x, mean, rstd, dy, dgamma, dbeta, column_partials(rows, width, s), rows, width,
                                      stream);
  kernels::layer_norm_backward_input(x, gamma, mean, rstd, dy, dx, rows, width, stream);
  CUDA_CHECK_LAUNCH();
}

void CudaTransformerOps::gelu_forward(const float* x, float* y, std::uint16_t* y16, std::size_t count, Stream& s) {
  kernels::gelu_forward(x, y, y16, copy_format(y16, autocast_precision()), count, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaTransformerOps::gelu_backward(const float* x, const float* dy, float* dx, std::size_t count, Stream& s) {
  kernels::gelu_backward(x, dy, dx, count, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaTransformerOps::softmax_forward(const float* x, float* y, int rows, int cols, Stream& s) {
  kernels::softmax_forward(x, y, rows, cols, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaTransformerOps::softmax_backward(const float* y, const float* dy, float* dx, int rows, int cols, Stream& s) {
  kernels::softmax_backward(y, dy, dx, rows, cols, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaTransformerOps::add_bias(float* x, const float* bias, int rows, int width, Stream& s) {
  kernels::add_row_bias(x, bias, rows, width, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaTransformerOps::column_sums(const float* dy, float* dbias, int rows, int width, Stream& s) {
  kernels::column_sums(dy, nullptr, dbias, column_partials(rows, width, s), rows, width, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaTransformerOps::layer_scale_forward(const float* x, const float* gamma, float* y, int rows, int width,
                                             Stream& s) {
  kernels::scale_columns(x, gamma, y, rows, width, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaTransformerOps::layer_scale_backward(const float* x, const float* gamma, const float* dy, float* dx,
                                              float* dgamma, int rows, int width, Stream& s) {
  const cudaStream_t stream = as_cuda(s).get();
  kernels::column_sums(dy, x, dgamma, column_partials(rows, width, s), rows, width, stream);  // before dx (may be dy)
  kernels::scale_columns(dy, gamma, dx, rows, width, stream);
  CUDA_CHECK_LAUNCH();
}

void CudaTransformerOps::rotary_forward(float* x, const float* cos, const float* sin, const RotaryShape& r,
                                        Stream& s) {
  check_rotary_shape(r);
  kernels::rotary(x, cos, sin, r.batch, r.tokens, r.prefix, r.heads, r.head_dim, /*inverse=*/false, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaTransformerOps::rotary_backward(float* dy, const float* cos, const float* sin, const RotaryShape& r,
                                         Stream& s) {
  check_rotary_shape(r);
  kernels::rotary(dy, cos, sin, r.batch, r.tokens, r.prefix, r.heads, r.head_dim, /*inverse=*/true, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaTransformerOps::rotary_tables(const float* scale, const float* inv_freq, float* cos, float* sin, int grid_h,
                                       int grid_w, int head_dim, Stream& s) {
  check_rotary_table_shape(grid_h, grid_w, head_dim);
  kernels::rotary_tables(scale, inv_freq, cos, sin, grid_h, grid_w, head_dim, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaTransformerOps::add(const float* a, const float* b, float* y, std::size_t count, Stream& s) {
  kernels::add(a, b, y, count, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaTransformerOps::transpose(const float* in, long long in_ld, long long in_stride, float* out,
                                   long long out_stride, int batch, int rows, int cols, Stream& s) {
  kernels::transpose(in, in_ld, in_stride, out, out_stride, batch, rows, cols, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaTransformerOps::patchify(const float* images, float* patches, int batch, int channels, int height, int width,
                                  int patch, Stream& s) {
  kernels::patchify(images, patches, batch, channels, height, width, patch, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaTransformerOps::window_partition(const float* tokens, float* windows, const float* fill,
                                          const WindowGrid& g, int width, Stream& s) {
  kernels::window_partition(tokens, windows, fill, g, width, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaTransformerOps::window_unpartition(const float* windows, float* tokens, const WindowGrid& g, int width,
                                            Stream& s) {
  kernels::window_unpartition(windows, tokens, g, width, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaTransformerOps::conv_patches(const float* images, float* patches, const ConvPatchGrid& g, Stream& s) {
  kernels::conv_patches(images, patches, g, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaTransformerOps::max_pool_forward(const float* x, float* y, const TokenPoolGrid& g, int width, Stream& s) {
  kernels::max_pool_forward(x, y, g, width, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

void CudaTransformerOps::max_pool_backward(const float* x, const float* dy, float* dx, const TokenPoolGrid& g,
                                           int width, Stream& s) {
  kernels::max_pool_backward(x, dy, dx, g, width, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
}

}  // namespace trainer::compute::cuda
