// nn.Linear over TransformerOps::matmul, add_bias and column_sums, once for every
// device (see transformer_ops.hpp), so the CPU twin and the GPU run the same three
// products with the same autocast rule.
#include "compute/transformer_ops.hpp"

namespace trainer::compute {

void TransformerOps::linear_forward(const float* x, const float* w, const float* bias, float* y, int rows, int in,
                                    int out, Stream& s) {
  MatmulShape g;  // y[rows, out] = x[rows, in] w[out, in]^T
  g.m = rows, g.n = out, g.k = in;
  g.transpose_b = true;
  g.lda = in, g.ldb = in, g.ldc = out;
  g.autocast = true;
  matmul(g, x, w, y, s);
  if (bias) add_bias(y, bias, rows, out, s);  // fp32: the product's result is not rounded
}

void TransformerOps::linear_backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                                     float* dbias, int rows, int in, int out, Stream& s) {
  if (dx) {
    MatmulShape g;  // dx[rows, in] = dy[rows, out] w[out, in]
    g.m = rows, g.n = in, g.k = out;
    g.lda = out, g.ldb = in, g.ldc = in;
    g.autocast = true;
    matmul(g, dy, w, dx, s);
  }
  MatmulShape g;  // dw[out, in] = dy^T x
  g.m = out, g.n = in, g.k = rows;
  g.transpose_a = true;
  g.lda = out, g.ldb = in, g.ldc = in;
  g.autocast = true;
  matmul(g, dy, x, dw, s);
  if (dbias) column_sums(dy, dbias, rows, out, s);  // from the unrounded fp32 dy
}

}  // namespace trainer::compute
