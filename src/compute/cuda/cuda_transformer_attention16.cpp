// CudaTransformerOps' attention in a 16-bit autocast precision (bf16-mixed /
// 16-mixed) when cuDNN's fused attention is off or cannot take the shape: the generic
// attention's products (compute::attention_products, the same shapes as
// transformer_attention.cpp) on 16-bit copies made once per call, one head at a time
// over the batch (attention_over_batch.hpp), as the fp32 path does. Scores,
// probabilities and their gradient stay fp32 (torch.autocast keeps softmax in fp32);
// only the probabilities and the scores' gradient are cast again to enter the products
// that read them. CPU twin: the generic attention with its autocast products
// (cpu_transformer_ops.cpp rounds the same operands).
//
// Until the evening of 2026-11-27 it went a batch row at a time (batch x 2 GEMM
// launches forward, batch x (4 GEMMs + softmax + cast) backward per block: 856 images/s
// for ViT-S at batch 64 on an H200 against the fused attention's 2,789). Over heads the
// backward holds the scores' gradient of every row: probs_count() floats and their
// 16-bit copy in the stream's scratch (about 150 MB for ViT-S at batch 64, 256x256)
// while it runs. Never run on a GPU since.
//
// Fewer queries than keys (SAM2's pooled queries) take the same path: planes
// [queries, keys], the query side's copies Q x width per batch row.
//
// The 16-bit planes' rows are padded to a multiple of 8 tokens: at 257 tokens (CLS +
// 16 x 16 patches) an unpadded row or plane starts 2-byte aligned, and cuBLAS then
// leaves its aligned tensor-core kernels for four of the six products (a reviewer's
// reading; unmeasured). The padding is never read: the products span the tokens.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint16_t

#include "compute/cuda/attention_over_batch.hpp"  // over_batch, the products' Views
#include "compute/cuda/cuda_check.hpp"     // CUDA_CHECK_LAUNCH
#include "compute/cuda/cuda_stream.hpp"    // as_cuda
#include "compute/cuda/cuda_transformer_ops.hpp"
#include "compute/cuda/scratch_carve.hpp"  // ScratchCarve
#include "transformer.cuh"                 // kernels::softmax_forward, softmax_backward

namespace trainer::compute::cuda {

namespace {

// Keys per 16-bit plane row: a multiple of 8 (16 bytes).
long long padded_tokens(int tokens) { return (static_cast<long long>(tokens) + 7) / 8 * 8; }

// One head's padded 16-bit plane ([queries, keys], rows padded), and every head's of one batch row.
long long padded_plane(const AttentionShape& a) { return a.queries() * padded_tokens(a.tokens); }
long long padded_planes(const AttentionShape& a) { return padded_plane(a) * a.heads; }

// A product over the batch (over_batch) whose first operand is a probability (or
// score-gradient) plane, read from the padded 16-bit planes.
MatmulShape on_padded_planes(MatmulShape g, const AttentionShape& a) {
  g.lda = padded_tokens(a.tokens);
  g.stride_a = padded_planes(a);
  return g;
}

}  // namespace

void CudaTransformerOps::attention_forward16(const float* q, const float* k, const float* v, float* probs, float* out,
                                             const AttentionShape& a, Stream& s) {
  check_attention_shape(a);
  const int Q = a.queries(), T = a.tokens, D = a.head_dim;
  const std::size_t plane = std::size_t(Q) * T;
  const std::size_t nq = std::size_t(Q) * a.width() * a.batch, n = std::size_t(T) * a.width() * a.batch;
  constexpr std::size_t h = sizeof(std::uint16_t);
  ScratchCarve carve(as_cuda(s), {nq * h, n * h, n * h, std::size_t(padded_planes(a)) * a.batch * h});
  auto* q16 = carve.as<std::uint16_t>(0);
  auto* k16 = carve.as<std::uint16_t>(1);
  auto* v16 = carve.as<std::uint16_t>(2);
  auto* p16 = carve.as<std::uint16_t>(3);
  cast16(q, q16, nq, s);
  cast16(k, k16, n, s);
  cast16(v, v16, n, s);
  const AttentionProducts p = attention_products(a);
  const MatmulShape scores = over_batch(p.scores, a, kScoresViews);
  const MatmulShape context = on_padded_planes(over_batch(p.context, a, kContextViews), a);
  for (int head = 0; head < a.heads; ++head) gemm16(scores, q16 + head * D, k16 + head * D, probs + head * plane, s);
  kernels::softmax_forward(probs, probs, a.batch * a.heads * Q, T, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
  cast16_rows(probs, p16, static_cast<long long>(a.batch) * a.heads * Q, T, padded_tokens(T), s);
  for (int head = 0; head < a.heads; ++head)
    gemm16(context, p16 + head * padded_plane(a), v16 + head * D, out + head * D, s);
}

void CudaTransformerOps::attention_backward16(const float* q, const float* k, const float* v, const float* probs,
                                              const float* dout, float* dq, float* dk, float* dv,
                                              const AttentionShape& a, Stream& s) {
  check_attention_shape(a);
  const int Q = a.queries(), T = a.tokens, D = a.head_dim;
  const std::size_t plane = std::size_t(Q) * T;
  const std::size_t nq = std::size_t(Q) * a.width() * a.batch, n = std::size_t(T) * a.width() * a.batch;
  const std::size_t planes16 = std::size_t(padded_planes(a)) * a.batch;
  constexpr std::size_t h = sizeof(std::uint16_t);
  ScratchCarve carve(as_cuda(s),
                     {nq * h, n * h, n * h, nq * h, planes16 * h, planes16 * h, a.probs_count() * sizeof(float)});
  auto* q16 = carve.as<std::uint16_t>(0);
  auto* k16 = carve.as<std::uint16_t>(1);
  auto* v16 = carve.as<std::uint16_t>(2);
  auto* dout16 = carve.as<std::uint16_t>(3);
  auto* p16 = carve.as<std::uint16_t>(4);
  auto* ds16 = carve.as<std::uint16_t>(5);
  float* dscores = carve.as<float>(6);
  cast16(q, q16, nq, s);
  cast16(k, k16, n, s);
  cast16(v, v16, n, s);
  cast16(dout, dout16, nq, s);
  const long long rows = static_cast<long long>(a.batch) * a.heads * Q;
  cast16_rows(probs, p16, rows, T, padded_tokens(T), s);
  const AttentionProducts p = attention_products(a);
  const MatmulShape dprobs = over_batch(p.dprobs, a, kDprobsViews);
  const MatmulShape dv_product = on_padded_planes(over_batch(p.dv, a, kDvViews), a);
  const MatmulShape dq_product = on_padded_planes(over_batch(p.dq, a, kDqViews), a);
  const MatmulShape dk_product = on_padded_planes(over_batch(p.dk, a, kDkViews), a);
  for (int head = 0; head < a.heads; ++head) {
    gemm16(dv_product, p16 + head * padded_plane(a), dout16 + head * D, dv + head * D, s);
    gemm16(dprobs, dout16 + head * D, v16 + head * D, dscores + head * plane, s);
  }
  // The scores' gradient from the fp32 probabilities (before the scale), as the generic code.
  kernels::softmax_backward(probs, dscores, dscores, rows, T, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
  cast16_rows(dscores, ds16, rows, T, padded_tokens(T), s);
  for (int head = 0; head < a.heads; ++head) {
    gemm16(dq_product, ds16 + head * padded_plane(a), k16 + head * D, dq + head * D, s);
    gemm16(dk_product, ds16 + head * padded_plane(a), q16 + head * D, dk + head * D, s);
  }
}

}  // namespace trainer::compute::cuda
