// Multi-head attention over TransformerOps::matmul and softmax, once for every
// device (see transformer_ops.hpp). Heads are not copied apart: head h of batch
// row b is a strided [tokens, head_dim] view (row stride heads * head_dim) of the
// Linear outputs, so each product is one batched matmul over the heads.
#include <cmath>   // std::sqrt
#include <string>  // std::to_string

#include "compute/transformer_ops.hpp"
#include "util/error.hpp"  // SystemError

namespace trainer::compute {
namespace {

// One product over all heads of one batch row: op(X_h) [m, k] * op(Y_h) [k, n].
// `x_tokens` / `y_tokens` say whether X / Y are token-major head views (row stride
// width, heads head_dim apart) or [tokens, tokens] probability planes.
MatmulShape per_head(const AttentionShape& a, int m, int n, int k, bool x_tokens, bool transpose_x, bool y_tokens,
                     bool transpose_y, bool c_tokens, float alpha) {
  // A plane is [queries, tokens]: its rows are the keys' count apart.
  const long long width = a.width(), plane = static_cast<long long>(a.queries()) * a.tokens;
  MatmulShape g;
  g.m = m, g.n = n, g.k = k;
  g.transpose_a = transpose_x, g.transpose_b = transpose_y;
  g.lda = x_tokens ? width : a.tokens, g.stride_a = x_tokens ? a.head_dim : plane;
  g.ldb = y_tokens ? width : a.tokens, g.stride_b = y_tokens ? a.head_dim : plane;
  g.ldc = c_tokens ? width : a.tokens, g.stride_c = c_tokens ? a.head_dim : plane;
  g.batch = a.heads;
  g.alpha = alpha;
  g.autocast = true;  // torch.autocast runs attention's matmuls in 16-bit
  return g;
}

}  // namespace

void check_attention_shape(const AttentionShape& a) {
  if (a.batch <= 0 || a.tokens <= 0 || a.heads <= 0 || a.head_dim <= 0 || a.query_tokens < 0)
    throw SystemError("internal error: attention shape [" + std::to_string(a.batch) + ", " +
                      std::to_string(a.tokens) + ", " + std::to_string(a.heads) + " x " +
                      std::to_string(a.head_dim) + "]");
}

AttentionProducts attention_products(const AttentionShape& a) {
  const int Q = a.queries(), T = a.tokens, D = a.head_dim;
  const float scale = 1.f / std::sqrt(float(D));
  AttentionProducts p;
  p.scores = per_head(a, Q, T, D, true, false, true, true, false, scale);
  p.context = per_head(a, Q, D, T, false, false, true, false, true, 1.f);
  p.dv = per_head(a, T, D, Q, false, true, true, false, true, 1.f);
  p.dprobs = per_head(a, Q, T, D, true, false, true, true, false, 1.f);
  p.dq = per_head(a, Q, D, T, false, false, true, false, true, scale);
  p.dk = per_head(a, T, D, Q, false, true, true, false, true, scale);
  return p;
}

void TransformerOps::attention_forward(const float* q, const float* k, const float* v, float* probs, float* out,
                                       const AttentionShape& a, Stream& s) {
  check_attention_shape(a);
  const int Q = a.queries(), T = a.tokens;
  const std::size_t q_rows = std::size_t(Q) * a.width(), rows = std::size_t(T) * a.width();
  const std::size_t planes = std::size_t(a.heads) * Q * T;
  const AttentionProducts p = attention_products(a);
  // scores_h = q_h k_h^T * scale, for every batch row, into probs.
  for (int b = 0; b < a.batch; ++b) matmul(p.scores, q + b * q_rows, k + b * rows, probs + b * planes, s);
  softmax_forward(probs, probs, a.batch * a.heads * Q, T, s);
  // out_h = probs_h v_h, written straight into the merged-heads layout.
  for (int b = 0; b < a.batch; ++b) matmul(p.context, probs + b * planes, v + b * rows, out + b * q_rows, s);
}

void TransformerOps::attention_backward(const float* q, const float* k, const float* v, const float* probs,
                                        const float* /*out: the probabilities suffice*/, const float* dout, float* dq,
                                        float* dk, float* dv, float* scratch, const AttentionShape& a, Stream& s) {
  check_attention_shape(a);
  const int Q = a.queries(), T = a.tokens, H = a.heads;
  const std::size_t q_rows = std::size_t(Q) * a.width(), rows = std::size_t(T) * a.width();
  const std::size_t planes = std::size_t(H) * Q * T;
  const AttentionProducts p = attention_products(a);
  for (int b = 0; b < a.batch; ++b) {
    const float* pb = probs + b * planes;
    matmul(p.dv, pb, dout + b * q_rows, dv + b * rows, s);
    matmul(p.dprobs, dout + b * q_rows, v + b * rows, scratch, s);
    softmax_backward(pb, scratch, scratch, H * Q, T, s);  // the scores' gradient (before the scale)
    matmul(p.dq, scratch, k + b * rows, dq + b * q_rows, s);
    matmul(p.dk, scratch, q + b * q_rows, dk + b * rows, s);
  }
}

}  // namespace trainer::compute
