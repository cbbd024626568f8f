#pragma once
// The generic attention's per-head products (compute::attention_products, which go a
// batch row at a time over the heads) re-strided to go one head at a time over the
// batch: for a fixed head, the q, k, v and output views of consecutive batch rows lie
// a row block (tokens x width) apart and its probability planes heads x tokens x
// tokens apart, so one strided-batched GEMM covers every batch row. Per head and row
// the products are the generic ones. Used by the fp32 and the 16-bit batched
// attention on GPUs (cuda_transformer_attention32.cpp, ...16.cpp).
#include "compute/transformer_ops.hpp"  // AttentionShape, MatmulShape
#include "util/error.hpp"               // TRAINER_ASSERT

namespace trainer::compute::cuda {

// Which operands of a product are token-major head views (the others: probability
// planes), as compute::attention_products lays them out.
struct TokenMajor {
  bool a, b, c;
};
inline constexpr TokenMajor kPlaneByTokens{false, true, true};   // context, dv, dq, dk: plane x tokens -> tokens
inline constexpr TokenMajor kTokensByTokens{true, true, false};  // scores, dprobs: tokens x tokens -> plane

// A per-head product of compute::attention_products re-strided for one head over the
// batch: token-major operands step by a row block, probability planes by all heads'.
inline MatmulShape over_batch(MatmulShape g, const AttentionShape& a, TokenMajor token_major) {
  const long long rows = static_cast<long long>(a.tokens) * a.width();
  const long long plane = static_cast<long long>(a.tokens) * a.tokens, planes = plane * a.heads;
  // attention_products' per-head strides: the head step of a token-major view, or one plane.
  TRAINER_ASSERT(g.stride_a == (token_major.a ? a.head_dim : plane) &&
                     g.stride_b == (token_major.b ? a.head_dim : plane) &&
                     g.stride_c == (token_major.c ? a.head_dim : plane),
                 "attention product laid out other than over_batch assumes");
  g.stride_a = token_major.a ? rows : planes;
  g.stride_b = token_major.b ? rows : planes;
  g.stride_c = token_major.c ? rows : planes;
  g.batch = a.batch;
  return g;
}

}  // namespace trainer::compute::cuda
