// CudaTransformerOps' attention in a 16-bit autocast precision (bf16-mixed /
// 16-mixed): the generic attention's products (compute::attention_products, the
// same shapes as transformer_attention.cpp) on 16-bit copies made once per call,
// where the generic code over matmul would cast q, k, v once per batch row and
// product. Scores, probabilities and their gradient stay fp32 (torch.autocast keeps
// softmax in fp32); only the probabilities and the scores' gradient are cast again
// to enter the products that read them. CPU twin: the generic attention with its
// autocast products (cpu_transformer_ops.cpp rounds the same operands).
//
// The 16-bit planes' rows are padded to a multiple of 8 tokens: at 257 tokens (CLS +
// 16 x 16 patches) an unpadded row or plane starts 2-byte aligned, and cuBLAS then
// leaves its aligned tensor-core kernels for four of the six products (a reviewer's
// reading; unmeasured). The padding is never read: the products span the tokens.
#include <cstdint>  // std::uint16_t

#include "compute/cuda/cuda_check.hpp"     // CUDA_CHECK_LAUNCH
#include "compute/cuda/cuda_stream.hpp"    // as_cuda
#include "compute/cuda/cuda_transformer_ops.hpp"
#include "compute/cuda/scratch_carve.hpp"  // ScratchCarve
#include "transformer.cuh"                 // kernels::softmax_forward, softmax_backward

namespace trainer::compute::cuda {

namespace {

// Tokens per 16-bit plane row: a multiple of 8 (16 bytes).
long long padded_tokens(int tokens) { return (static_cast<long long>(tokens) + 7) / 8 * 8; }

// A product whose first operand is a probability (or score-gradient) plane, read from
// the padded 16-bit planes.
MatmulShape on_padded_planes(MatmulShape g, int tokens) {
  g.lda = padded_tokens(tokens);
  g.stride_a = tokens * padded_tokens(tokens);
  return g;
}

}  // namespace

void CudaTransformerOps::attention_forward16(const float* q, const float* k, const float* v, float* probs, float* out,
                                             const AttentionShape& a, Stream& s) {
  check_attention_shape(a);
  const int T = a.tokens;
  const std::size_t rows = std::size_t(T) * a.width(), planes = std::size_t(a.heads) * T * T;
  const std::size_t n = rows * a.batch;
  const std::size_t planes16 = std::size_t(a.heads) * T * padded_tokens(T);
  constexpr std::size_t h = sizeof(std::uint16_t);
  ScratchCarve carve(as_cuda(s), {n * h, n * h, n * h, planes16 * a.batch * h});
  auto* q16 = carve.as<std::uint16_t>(0);
  auto* k16 = carve.as<std::uint16_t>(1);
  auto* v16 = carve.as<std::uint16_t>(2);
  auto* p16 = carve.as<std::uint16_t>(3);
  cast16(q, q16, n, s);
  cast16(k, k16, n, s);
  cast16(v, v16, n, s);
  const AttentionProducts p = attention_products(a);
  for (int b = 0; b < a.batch; ++b) gemm16(p.scores, q16 + b * rows, k16 + b * rows, probs + b * planes, s);
  kernels::softmax_forward(probs, probs, a.batch * a.heads * T, T, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
  cast16_rows(probs, p16, static_cast<long long>(a.batch) * a.heads * T, T, padded_tokens(T), s);
  const MatmulShape context = on_padded_planes(p.context, T);
  for (int b = 0; b < a.batch; ++b) gemm16(context, p16 + b * planes16, v16 + b * rows, out + b * rows, s);
}

void CudaTransformerOps::attention_backward16(const float* q, const float* k, const float* v, const float* probs,
                                              const float* dout, float* dq, float* dk, float* dv, float* scratch,
                                              const AttentionShape& a, Stream& s) {
  check_attention_shape(a);
  const int T = a.tokens, H = a.heads;
  const std::size_t rows = std::size_t(T) * a.width(), planes = std::size_t(H) * T * T;
  const std::size_t n = rows * a.batch;
  const std::size_t planes16 = std::size_t(H) * T * padded_tokens(T);
  constexpr std::size_t h = sizeof(std::uint16_t);
  ScratchCarve carve(as_cuda(s), {n * h, n * h, n * h, n * h, planes16 * a.batch * h, planes16 * h});
  auto* q16 = carve.as<std::uint16_t>(0);
  auto* k16 = carve.as<std::uint16_t>(1);
  auto* v16 = carve.as<std::uint16_t>(2);
  auto* dout16 = carve.as<std::uint16_t>(3);
  auto* p16 = carve.as<std::uint16_t>(4);
  auto* ds16 = carve.as<std::uint16_t>(5);  // one batch row's scores gradient
  cast16(q, q16, n, s);
  cast16(k, k16, n, s);
  cast16(v, v16, n, s);
  cast16(dout, dout16, n, s);
  cast16_rows(probs, p16, static_cast<long long>(a.batch) * H * T, T, padded_tokens(T), s);
  const AttentionProducts p = attention_products(a);
  const MatmulShape dv_product = on_padded_planes(p.dv, T), dq_product = on_padded_planes(p.dq, T),
                    dk_product = on_padded_planes(p.dk, T);
  for (int b = 0; b < a.batch; ++b) {
    gemm16(dv_product, p16 + b * planes16, dout16 + b * rows, dv + b * rows, s);
    gemm16(p.dprobs, dout16 + b * rows, v16 + b * rows, scratch, s);
    // The scores' gradient from the fp32 probabilities (before the scale), as the generic code.
    kernels::softmax_backward(probs + b * planes, scratch, scratch, H * T, T, as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
    cast16_rows(scratch, ds16, static_cast<long long>(H) * T, T, padded_tokens(T), s);
    gemm16(dq_product, ds16, k16 + b * rows, dq + b * rows, s);
    gemm16(dk_product, ds16, q16 + b * rows, dk + b * rows, s);
  }
}

}  // namespace trainer::compute::cuda
