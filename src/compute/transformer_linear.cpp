// nn.Linear over TransformerOps::matmul, add_bias and column_sums, once for every
// device (see transformer_ops.hpp), so the CPU twin and the GPU run the same three
// products with the same autocast rule.
#include "compute/transformer_ops.hpp"

namespace trainer::compute {

LinearProducts linear_products(int rows, int in, int out) {
  LinearProducts p;
  p.y.m = rows, p.y.n = out, p.y.k = in;  // y[rows, out] = x[rows, in] w[out, in]^T
  p.y.transpose_b = true;
  p.y.lda = in, p.y.ldb = in, p.y.ldc = out;
  p.dx.m = rows, p.dx.n = in, p.dx.k = out;  // dx[rows, in] = dy[rows, out] w[out, in]
  p.dx.lda = out, p.dx.ldb = in, p.dx.ldc = in;
  p.dw.m = out, p.dw.n = in, p.dw.k = rows;  // dw[out, in] = dy^T x
  p.dw.transpose_a = true;
  p.dw.lda = out, p.dw.ldb = in, p.dw.ldc = in;
  p.y.autocast = p.dx.autocast = p.dw.autocast = true;
  return p;
}

void TransformerOps::linear_forward(const float* x, const std::uint16_t* x16, const float* w, const float* bias,
                                    float* y, int rows, int in, int out, Stream& s) {
  matmul_with_copies(linear_products(rows, in, out).y, x, x16, w, nullptr, y, s);
  if (bias) add_bias(y, bias, rows, out, s);  // fp32: the product's result is not rounded
}

void TransformerOps::linear_backward(const float* x, const std::uint16_t* x16, const float* w, const float* dy,
                                     float* dx, float* dw, float* dbias, int rows, int in, int out, Stream& s) {
  const LinearProducts p = linear_products(rows, in, out);
  if (dx) matmul(p.dx, dy, w, dx, s);
  matmul_with_copies(p.dw, dy, nullptr, x, x16, dw, s);
  if (dbias) column_sums(dy, dbias, rows, out, s);  // from the unrounded fp32 dy
}

void TransformerOps::linears_forward(const float* x, const std::uint16_t* x16, const SharedInputLinear* layers,
                                     int count, int rows, int in, Stream& s) {
  for (int i = 0; i < count; ++i)
    linear_forward(x, x16, layers[i].w, layers[i].bias, layers[i].y, rows, in, layers[i].out, s);
}

void TransformerOps::linears_backward(const float* x, const std::uint16_t* x16, const SharedInputLinear* layers,
                                      int count, float* dx, int rows, int in, Stream& s) {
  for (int i = 0; i < count; ++i) {
    const SharedInputLinear& l = layers[i];
    linear_backward(x, x16, l.w, l.dy, i == 0 ? dx : nullptr, l.dw, l.dbias, rows, in, l.out, s);
    if (i == 0 || !dx) continue;
    MatmulShape add = linear_products(rows, in, l.out).dx;  // the rest of dx: dx += dy_i w_i
    add.beta = 1.f;
    matmul(add, l.dy, l.w, dx, s);
  }
}

}  // namespace trainer::compute
