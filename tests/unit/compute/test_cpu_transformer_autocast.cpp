// The CPU emulation of the ViT ops' mixed precision (torch.autocast's products,
// compute/transformer_ops.hpp): an autocast product in bf16 / fp16 is the fp32
// product of operands rounded to the 16-bit type (fp32 accumulation, fp32 result);
// everything else stays fp32. The CUDA path is checked against this emulation in
// tests/gpu/test_cuda_transformer_autocast.cpp.
#include <catch2/catch.hpp>

#include <algorithm>  // std::max
#include <cmath>      // std::exp, std::sqrt, std::fabs
#include <random>     // std::mt19937
#include <vector>     // std::vector

#include "compute/backend.hpp"    // make_cpu_backend, Backend::transformer_ops
#include "compute/float16.hpp"    // f16::float_to_bf16, float_to_half
#include "compute/precision.hpp"  // Precision, round_to_precision
#include "util/error.hpp"         // SystemError

using namespace trainer::compute;

namespace {

std::vector<float> random_values(std::size_t n, unsigned seed, float scale = 1.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = u(gen);
  return v;
}

std::vector<float> rounded(Precision p, std::vector<float> v) {
  for (auto& x : v) x = round_to_precision(p, x);
  return v;
}

// max |a - b| / max |b|.
template <class B>
double rel_error(const std::vector<float>& a, const std::vector<B>& b) {
  REQUIRE(a.size() == b.size());
  double num = 0, den = 1e-30;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num = std::max(num, std::fabs(double(a[i]) - double(b[i])));
    den = std::max(den, std::fabs(double(b[i])));
  }
  return num / den;
}

const char* name_of(Precision p) { return p == Precision::bf16 ? "bf16" : "fp16"; }

}  // namespace

TEST_CASE("autocast linear and matmul on the CPU are fp32 products of 16-bit-rounded operands",
          "[transformer][autocast]") {
  const Precision p = GENERATE(Precision::bf16, Precision::fp16);
  INFO(name_of(p));
  auto mixed = make_cpu_backend(2, p), full = make_cpu_backend(2);
  auto& m = mixed->transformer_ops();
  auto& f = full->transformer_ops();
  Stream& ms = mixed->default_stream();
  Stream& fs = full->default_stream();
  CHECK(m.autocast_precision() == p);
  CHECK(f.autocast_precision() == Precision::fp32);

  const int rows = 37, in = 48, out = 40;
  const auto x = random_values(std::size_t(rows) * in, 1), w = random_values(std::size_t(out) * in, 2, 0.2f);
  const auto bias = random_values(out, 3), dy = random_values(std::size_t(rows) * out, 4);
  const auto xr = rounded(p, x), wr = rounded(p, w), dyr = rounded(p, dy);
  REQUIRE(xr != x);  // the rounding changes these values, so the test can tell

  std::vector<float> y(std::size_t(rows) * out), y_ref(y.size()), y_fp32(y.size());
  m.linear_forward(x.data(), nullptr, w.data(), bias.data(), y.data(), rows, in, out, ms);
  f.linear_forward(xr.data(), nullptr, wr.data(), bias.data(), y_ref.data(), rows, in, out, fs);
  f.linear_forward(x.data(), nullptr, w.data(), bias.data(), y_fp32.data(), rows, in, out, fs);
  CHECK(y == y_ref);
  CHECK(y != y_fp32);
  CHECK(rel_error(y, y_fp32) < (p == Precision::bf16 ? 2e-2 : 3e-3));

  std::vector<float> dx(x.size()), dw(w.size()), db(out), dx_ref(x.size()), dw_ref(w.size()), db_ref(out);
  m.linear_backward(x.data(), nullptr, w.data(), dy.data(), dx.data(), dw.data(), db.data(), rows, in, out, ms);
  f.linear_backward(xr.data(), nullptr, wr.data(), dyr.data(), dx_ref.data(), dw_ref.data(), nullptr, rows, in, out,
                    fs);
  CHECK(dx == dx_ref);
  CHECK(dw == dw_ref);
  f.column_sums(dy.data(), db_ref.data(), rows, out, fs);  // the bias gradient: fp32, from the unrounded dy
  CHECK(db == db_ref);

  // A strided, transposed, batched product with alpha and beta (C accumulates in fp32).
  MatmulShape g;
  g.m = 13, g.n = 9, g.k = 11, g.batch = 3, g.transpose_a = true, g.transpose_b = true;
  g.lda = 16, g.ldb = 12, g.ldc = 10, g.stride_a = 16 * 11, g.stride_b = 12 * 9, g.stride_c = 10 * 13;
  g.alpha = 0.5f, g.beta = 2.f;
  const auto a = random_values(std::size_t(g.stride_a) * g.batch, 5);
  const auto b = random_values(std::size_t(g.stride_b) * g.batch, 6);
  const auto c0 = random_values(std::size_t(g.stride_c) * g.batch, 7);
  const auto ar = rounded(p, a), br = rounded(p, b);
  auto c = c0, c_ref = c0, c_plain = c0, c_plain_ref = c0;
  g.autocast = true;
  m.matmul(g, a.data(), b.data(), c.data(), ms);
  g.autocast = false;
  f.matmul(g, ar.data(), br.data(), c_ref.data(), fs);
  CHECK(c == c_ref);
  // Not an autocast product (the position embeddings' resize): fp32 in every precision.
  m.matmul(g, a.data(), b.data(), c_plain.data(), ms);
  f.matmul(g, a.data(), b.data(), c_plain_ref.data(), fs);
  CHECK(c_plain == c_plain_ref);

  // TRAINER_VIT_AUTOCAST=0: the fp32 products of before.
  m.set_autocast(false);
  CHECK(m.autocast_precision() == Precision::fp32);
  m.linear_forward(x.data(), nullptr, w.data(), bias.data(), y.data(), rows, in, out, ms);
  CHECK(y == y_fp32);
}

TEST_CASE("16-bit activation copies on the CPU: LayerNorm and GELU write them, a Linear reads them",
          "[transformer][autocast]") {
  const Precision p = GENERATE(Precision::bf16, Precision::fp16);
  INFO(name_of(p));
  auto mixed = make_cpu_backend(2, p);
  auto& m = mixed->transformer_ops();
  Stream& s = mixed->default_stream();
  REQUIRE(m.activation_copies());
  const auto bits = [&](const std::vector<float>& v) {
    std::vector<std::uint16_t> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i)
      out[i] = p == Precision::bf16 ? f16::float_to_bf16(v[i]) : f16::float_to_half(v[i]);
    return out;
  };
  const int rows = 9, width = 24, out = 20;
  const auto x = random_values(std::size_t(rows) * width, 21, 3.f), gamma = random_values(width, 22);
  const auto beta = random_values(width, 23);

  // The producers: the fp32 output as without a copy, and the copy its 16-bit bits.
  std::vector<float> y(x.size()), y_plain(x.size()), mean(rows), rstd(rows);
  std::vector<std::uint16_t> y16(x.size(), 0xFFFF);
  m.layer_norm_forward(x.data(), gamma.data(), beta.data(), y.data(), y16.data(), mean.data(), rstd.data(), rows,
                       width, 1e-5f, s);
  m.layer_norm_forward(x.data(), gamma.data(), beta.data(), y_plain.data(), nullptr, mean.data(), rstd.data(), rows,
                       width, 1e-5f, s);
  CHECK(y == y_plain);
  CHECK(y16 == bits(y));
  std::vector<float> g(x.size()), g_plain(x.size());
  std::vector<std::uint16_t> g16(x.size(), 0xFFFF);
  m.gelu_forward(x.data(), g.data(), g16.data(), x.size(), s);
  m.gelu_forward(x.data(), g_plain.data(), nullptr, x.size(), s);
  CHECK(g == g_plain);
  CHECK(g16 == bits(g));

  // A Linear reading the copy: the same bits as rounding y, in both passes.
  const auto w = random_values(std::size_t(out) * width, 24, 0.2f), dy = random_values(std::size_t(rows) * out, 25);
  std::vector<float> z(std::size_t(rows) * out), z_plain(z.size()), dw(w.size()), dw_plain(w.size());
  m.linear_forward(y.data(), y16.data(), w.data(), nullptr, z.data(), rows, width, out, s);
  m.linear_forward(y.data(), nullptr, w.data(), nullptr, z_plain.data(), rows, width, out, s);
  CHECK(z == z_plain);
  m.linear_backward(y.data(), y16.data(), w.data(), dy.data(), nullptr, dw.data(), nullptr, rows, width, out, s);
  m.linear_backward(y.data(), nullptr, w.data(), dy.data(), nullptr, dw_plain.data(), nullptr, rows, width, out, s);
  CHECK(dw == dw_plain);
  // ... and the copy is what it reads: another copy gives another product.
  std::vector<std::uint16_t> other = bits(random_values(y.size(), 26));
  m.linear_forward(y.data(), other.data(), w.data(), nullptr, z.data(), rows, width, out, s);
  CHECK(z != z_plain);
  m.linear_backward(y.data(), other.data(), w.data(), dy.data(), nullptr, dw.data(), nullptr, rows, width, out, s);
  CHECK(dw != dw_plain);

  // fp32 has no 16-bit format to write a copy in.
  auto full = make_cpu_backend(2);
  CHECK_FALSE(full->transformer_ops().activation_copies());
  CHECK_THROWS_AS(full->transformer_ops().gelu_forward(x.data(), g.data(), g16.data(), x.size(),
                                                       full->default_stream()),
                  trainer::SystemError);
}

TEST_CASE("autocast attention on the CPU: 16-bit products, fp32 softmax and probabilities",
          "[transformer][autocast]") {
  const Precision p = GENERATE(Precision::bf16, Precision::fp16);
  INFO(name_of(p));
  auto mixed = make_cpu_backend(2, p), full = make_cpu_backend(2);
  auto& m = mixed->transformer_ops();
  auto& f = full->transformer_ops();
  AttentionShape a;
  a.batch = 2, a.tokens = 17, a.heads = 3, a.head_dim = 8;
  const int B = a.batch, T = a.tokens, H = a.heads, D = a.head_dim, W = a.width();
  const std::size_t n = std::size_t(B) * T * W;
  const auto q = random_values(n, 11, 2.f), k = random_values(n, 12, 2.f), v = random_values(n, 13);
  const auto dout = random_values(n, 14);
  const auto qr = rounded(p, q), kr = rounded(p, k), vr = rounded(p, v), doutr = rounded(p, dout);

  std::vector<float> probs(a.probs_count()), out(n), probs_ref(a.probs_count()), out_ref(n);
  m.attention_forward(q.data(), k.data(), v.data(), probs.data(), out.data(), a, mixed->default_stream());
  // The scores' product reads rounded q and k; softmax runs in fp32 on the fp32 scores.
  f.attention_forward(qr.data(), kr.data(), vr.data(), probs_ref.data(), out_ref.data(), a, full->default_stream());
  CHECK(probs == probs_ref);
  // The context product reads the probabilities rounded too: out = round(P) round(v),
  // here in double from the op's own fp32 probabilities.
  const auto pr = rounded(p, probs);
  const auto at = [&](const std::vector<float>& t, int b, int i, int h, int d) {
    return double(t[(std::size_t(b) * T + i) * W + h * D + d]);
  };
  const auto plane = [&](const std::vector<float>& t, int b, int h, int i, int j) {
    return double(t[((std::size_t(b) * H + h) * T + i) * T + j]);
  };
  std::vector<double> out_expected(n), dv_expected(n), dq_expected(n), dk_expected(n);
  const double scale = 1.0 / std::sqrt(double(D));
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      // dS = P (dP - sum_j dP P) with dP = round(dout) round(v)^T, as the op (fp32 P).
      std::vector<double> ds(std::size_t(T) * T);
      for (int i = 0; i < T; ++i) {
        std::vector<double> dp(T);
        double dot = 0;
        for (int j = 0; j < T; ++j) {
          for (int d = 0; d < D; ++d) dp[j] += at(doutr, b, i, h, d) * at(vr, b, j, h, d);
          dot += dp[j] * plane(probs, b, h, i, j);
        }
        for (int j = 0; j < T; ++j)
          ds[std::size_t(i) * T + j] = round_to_precision(p, float(plane(probs, b, h, i, j) * (dp[j] - dot)));
      }
      for (int i = 0; i < T; ++i)
        for (int d = 0; d < D; ++d) {
          double o = 0, dvv = 0, dqq = 0, dkk = 0;
          for (int j = 0; j < T; ++j) {
            o += plane(pr, b, h, i, j) * at(vr, b, j, h, d);
            dvv += plane(pr, b, h, j, i) * at(doutr, b, j, h, d);
            dqq += ds[std::size_t(i) * T + j] * at(kr, b, j, h, d);
            dkk += ds[std::size_t(j) * T + i] * at(qr, b, j, h, d);
          }
          const std::size_t e = (std::size_t(b) * T + i) * W + h * D + d;
          out_expected[e] = o, dv_expected[e] = dvv, dq_expected[e] = dqq * scale, dk_expected[e] = dkk * scale;
        }
    }
  CHECK(rel_error(out, out_expected) < 1e-5);

  std::vector<float> dq(n), dk(n), dv(n), scratch(a.scratch_count());
  m.attention_backward(q.data(), k.data(), v.data(), probs.data(), out.data(), dout.data(), dq.data(), dk.data(),
                       dv.data(), scratch.data(), a, mixed->default_stream());
  CHECK(rel_error(dv, dv_expected) < 1e-5);
  // dS is rounded from fp32 in the op and from double here: an element on a rounding
  // boundary may land one 16-bit step apart, hence the looser bound (1e-5 measured).
  CHECK(rel_error(dq, dq_expected) < 5e-4);
  CHECK(rel_error(dk, dk_expected) < 5e-4);

  // Against fp32 attention on the unrounded inputs: close, and not the same.
  std::vector<float> out32(n), probs32(a.probs_count());
  f.attention_forward(q.data(), k.data(), v.data(), probs32.data(), out32.data(), a, full->default_stream());
  CHECK(out != out32);
  CHECK(rel_error(out, out32) < (p == Precision::bf16 ? 3e-2 : 5e-3));
}
