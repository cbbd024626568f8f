// CudaTransformerOps' attention when the autocast precision is fp32 (precision 32,
// TF32 when allowed; or TRAINER_VIT_AUTOCAST=0): the generic attention's products
// (compute::attention_products: the same shapes, so the same sums per head and batch
// row), one head at a time over every batch row (attention_over_batch.hpp). The
// generic code goes a batch row at a time over the heads: at batch 64 that was 64 x 2
// GEMM launches forward and 64 x (4 GEMMs + a softmax) backward per block, about 5,400
// small launches per ViT-S step (0.42x PyTorch's fp32 step on an H200, 2026-11-27;
// 1.06x over heads that evening, TF32). The scores' gradient for every head and batch row
// lives in the stream's scratch (probs_count() floats), so its softmax backward is one
// launch; the caller's one-row `scratch` is not needed. That costs probs_count() floats
// of the stream's scratch while a backward runs (about 100 MB for ViT-S at batch 64,
// 256x256). Per head and row the products are the generic ones, but cuBLAS may pick
// other kernels for a batch of 64 than of 6, so the bits can differ. CPU twin: the
// generic attention. Fewer queries than keys (SAM2's pooled queries) take the same
// path: planes [queries, keys], the query side's row blocks Q x width.
#include <cstddef>  // std::size_t

#include "compute/cuda/attention_over_batch.hpp"  // over_batch, the products' Views
#include "compute/cuda/cuda_check.hpp"     // CUDA_CHECK_LAUNCH
#include "compute/cuda/cuda_stream.hpp"    // as_cuda
#include "compute/cuda/cuda_transformer_ops.hpp"
#include "compute/cuda/scratch_carve.hpp"  // ScratchCarve
#include "transformer.cuh"                 // kernels::softmax_forward, softmax_backward

namespace trainer::compute::cuda {

void CudaTransformerOps::attention_forward32(const float* q, const float* k, const float* v, float* probs,
                                             float* out, const AttentionShape& a, Stream& s) {
  check_attention_shape(a);
  const int Q = a.queries(), T = a.tokens, D = a.head_dim;
  const std::size_t plane = std::size_t(Q) * T;
  const AttentionProducts p = attention_products(a);
  const MatmulShape scores = over_batch(p.scores, a, kScoresViews);
  const MatmulShape context = over_batch(p.context, a, kContextViews);
  for (int h = 0; h < a.heads; ++h) matmul(scores, q + h * D, k + h * D, probs + h * plane, s);
  kernels::softmax_forward(probs, probs, a.batch * a.heads * Q, T, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
  for (int h = 0; h < a.heads; ++h) matmul(context, probs + h * plane, v + h * D, out + h * D, s);
}

void CudaTransformerOps::attention_backward32(const float* q, const float* k, const float* v, const float* probs,
                                              const float* dout, float* dq, float* dk, float* dv,
                                              const AttentionShape& a, Stream& s) {
  check_attention_shape(a);
  const int Q = a.queries(), T = a.tokens, D = a.head_dim;
  const std::size_t plane = std::size_t(Q) * T;
  ScratchCarve carve(as_cuda(s), {a.probs_count() * sizeof(float)});
  float* dscores = carve.as<float>(0);
  const AttentionProducts p = attention_products(a);
  const MatmulShape dprobs = over_batch(p.dprobs, a, kDprobsViews);
  const MatmulShape dv_product = over_batch(p.dv, a, kDvViews);
  const MatmulShape dq_product = over_batch(p.dq, a, kDqViews);
  const MatmulShape dk_product = over_batch(p.dk, a, kDkViews);
  for (int h = 0; h < a.heads; ++h) matmul(dprobs, dout + h * D, v + h * D, dscores + h * plane, s);
  // The scores' gradient from the probabilities (before the scale), as the generic code.
  kernels::softmax_backward(probs, dscores, dscores, a.batch * a.heads * Q, T, as_cuda(s).get());
  CUDA_CHECK_LAUNCH();
  for (int h = 0; h < a.heads; ++h) {
    matmul(dv_product, probs + h * plane, dout + h * D, dv + h * D, s);
    matmul(dq_product, dscores + h * plane, k + h * D, dq + h * D, s);
    matmul(dk_product, dscores + h * plane, q + h * D, dk + h * D, s);
  }
}

}  // namespace trainer::compute::cuda
