#pragma once
// The generic attention's per-head products (compute::attention_products, which go a
// batch row at a time over the heads) re-strided to go one head at a time over the
// batch: for a fixed head, the q, k, v and output views of consecutive batch rows lie
// a row block (queries or keys x width) apart and its probability planes heads x
// queries x keys apart, so one strided-batched GEMM covers every batch row. Per head
// and row the products are the generic ones. Used by the fp32 and the 16-bit batched
// attention on GPUs (cuda_transformer_attention32.cpp, ...16.cpp), with as many
// queries as keys or fewer (SAM2's pooled queries: a window's Q queries over its T keys).
#include "compute/transformer_ops.hpp"  // AttentionShape, MatmulShape
#include "util/error.hpp"               // TRAINER_ASSERT

namespace trainer::compute::cuda {

// What an operand of a product is, as compute::attention_products lays them out: a
// token-major head view of the queries' side (q, out, dout, dq), of the keys' side
// (k, v, dk, dv), or a probability (or score-gradient) plane [queries, keys].
enum class View { queries, keys, plane };
struct Views {
  View a, b, c;
};
inline constexpr Views kScoresViews{View::queries, View::keys, View::plane};   // q k^T
inline constexpr Views kContextViews{View::plane, View::keys, View::queries};  // P v
inline constexpr Views kDvViews{View::plane, View::queries, View::keys};       // P^T dout
inline constexpr Views kDprobsViews{View::queries, View::keys, View::plane};   // dout v^T
inline constexpr Views kDqViews{View::plane, View::keys, View::queries};       // dS k
inline constexpr Views kDkViews{View::plane, View::queries, View::keys};       // dS^T q

// A per-head product of compute::attention_products re-strided for one head over the
// batch: token-major operands step by their side's row block, planes by all heads'.
inline MatmulShape over_batch(MatmulShape g, const AttentionShape& a, Views views) {
  const long long width = a.width();
  const long long plane = static_cast<long long>(a.queries()) * a.tokens, planes = plane * a.heads;
  const auto head_step = [&](View v) { return v == View::plane ? plane : static_cast<long long>(a.head_dim); };
  const auto batch_step = [&](View v) {
    return v == View::plane ? planes : (v == View::queries ? a.queries() : a.tokens) * width;
  };
  // attention_products' per-head strides: the head step of a token-major view, or one plane.
  TRAINER_ASSERT(g.stride_a == head_step(views.a) && g.stride_b == head_step(views.b) &&
                     g.stride_c == head_step(views.c),
                 "attention product laid out other than over_batch assumes");
  g.stride_a = batch_step(views.a);
  g.stride_b = batch_step(views.b);
  g.stride_c = batch_step(views.c);
  g.batch = a.batch;
  return g;
}

}  // namespace trainer::compute::cuda
