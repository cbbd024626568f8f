// The CPU TransformerOps (compute/transformer_ops.hpp) against direct formulas in
// double precision, and every backward against central finite differences of a
// random linear functional of the forward's output.
#include <catch2/catch.hpp>

#include <cmath>       // std::erf, std::exp, std::sqrt, std::fabs
#include <cstdint>     // std::int64_t
#include <functional>  // std::function
#include <random>      // std::mt19937
#include <vector>      // std::vector

#include "compute/backend.hpp"  // make_cpu_backend, Backend::transformer_ops
#include "compute/hiera_rule.hpp"  // TokenPoolGrid, ConvPatchGrid

using namespace trainer::compute;

namespace {

std::vector<float> random_values(std::size_t n, unsigned seed, float scale = 1.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = u(gen);
  return v;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

// d/dinput[i] of sum(r * f(input)) by central differences, for the `probes` indices
// spread over the input; f evaluates the forward op into its output.
struct FiniteDifference {
  std::vector<float>& input;
  std::function<std::vector<float>()> forward;
  const std::vector<float>& r;
  double at(std::size_t i, float h) {
    const float keep = input[i];
    input[i] = keep + h;
    const auto up = forward();
    input[i] = keep - h;
    const auto down = forward();
    input[i] = keep;
    double d = 0;
    for (std::size_t j = 0; j < r.size(); ++j) d += double(r[j]) * (double(up[j]) - double(down[j]));
    return d / (2.0 * h);
  }
};

// Checks `analytic` (the gradient of sum(r * f)) against finite differences at up to
// 24 indices; tolerance relative to the gradient's largest magnitude.
void check_gradient(const char* what, std::vector<float>& input, const std::vector<float>& analytic,
                    const std::function<std::vector<float>()>& forward, const std::vector<float>& r,
                    float h = 1e-2f, double tolerance = 2e-3) {
  INFO(what);
  REQUIRE(analytic.size() == input.size());
  double scale = 1e-6;
  for (float g : analytic) scale = std::max(scale, double(std::fabs(g)));
  FiniteDifference fd{input, forward, r};
  const std::size_t step = std::max<std::size_t>(1, input.size() / 24);
  int checked = 0;
  for (std::size_t i = 0; i < input.size(); i += step, ++checked) {
    INFO("index " << i);
    CHECK(fd.at(i, h) == Approx(analytic[i]).margin(tolerance * scale));
  }
  CHECK(checked > 0);
}

struct Ops {
  std::unique_ptr<Backend> backend = make_cpu_backend(2);
  TransformerOps& ops = backend->transformer_ops();
  Stream& s = backend->default_stream();
};

}  // namespace

TEST_CASE("cpu matmul: transposes, leading dimensions, batches, alpha and beta", "[compute][transformer]") {
  Ops t;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      MatmulShape g;
      g.m = 5, g.n = 7, g.k = 3, g.batch = 3;
      g.transpose_a = ta, g.transpose_b = tb;
      // Stored A is [m, k] or [k, m]; pad each row by 2 to exercise the strides.
      g.lda = (ta ? g.m : g.k) + 2, g.ldb = (tb ? g.k : g.n) + 1, g.ldc = g.n + 3;
      g.stride_a = g.lda * (ta ? g.k : g.m), g.stride_b = g.ldb * (tb ? g.n : g.k), g.stride_c = g.ldc * g.m;
      g.alpha = 0.75f, g.beta = -0.5f;
      const auto a = random_values(std::size_t(g.stride_a) * g.batch, 1);
      const auto b = random_values(std::size_t(g.stride_b) * g.batch, 2);
      auto c = random_values(std::size_t(g.stride_c) * g.batch, 3);
      std::vector<double> expected(c.begin(), c.end());
      for (int p = 0; p < g.batch; ++p)
        for (int i = 0; i < g.m; ++i)
          for (int j = 0; j < g.n; ++j) {
            double sum = 0;
            for (int l = 0; l < g.k; ++l) {
              const double av = ta ? a[p * g.stride_a + l * g.lda + i] : a[p * g.stride_a + i * g.lda + l];
              const double bv = tb ? b[p * g.stride_b + j * g.ldb + l] : b[p * g.stride_b + l * g.ldb + j];
              sum += av * bv;
            }
            double& out = expected[p * g.stride_c + i * g.ldc + j];
            out = g.alpha * sum + g.beta * out;
          }
      t.ops.matmul(g, a.data(), b.data(), c.data(), t.s);
      INFO("transpose_a " << ta << " transpose_b " << tb);
      CHECK(max_abs_diff(c, expected) < 1e-5);
    }
}

TEST_CASE("cpu linear: y = x w^T + b with w [out, in]; gradients by formula", "[compute][transformer]") {
  Ops t;
  const int rows = 9, in = 6, out = 4;
  const auto x = random_values(rows * in, 4), w = random_values(out * in, 5), bias = random_values(out, 6);
  std::vector<float> y(rows * out);
  t.ops.linear_forward(x.data(), nullptr, w.data(), bias.data(), y.data(), rows, in, out, t.s);
  std::vector<double> expected(rows * out);
  for (int i = 0; i < rows; ++i)
    for (int o = 0; o < out; ++o) {
      double sum = bias[o];
      for (int c = 0; c < in; ++c) sum += double(x[i * in + c]) * w[o * in + c];
      expected[i * out + o] = sum;
    }
  CHECK(max_abs_diff(y, expected) < 1e-5);

  const auto dy = random_values(rows * out, 7);
  std::vector<float> dx(rows * in), dw(out * in), db(out);
  t.ops.linear_backward(x.data(), nullptr, w.data(), dy.data(), dx.data(), dw.data(), db.data(), rows, in, out, t.s);
  std::vector<double> edx(rows * in, 0), edw(out * in, 0), edb(out, 0);
  for (int i = 0; i < rows; ++i)
    for (int o = 0; o < out; ++o) {
      edb[o] += dy[i * out + o];
      for (int c = 0; c < in; ++c) {
        edx[i * in + c] += double(dy[i * out + o]) * w[o * in + c];
        edw[o * in + c] += double(dy[i * out + o]) * x[i * in + c];
      }
    }
  CHECK(max_abs_diff(dx, edx) < 1e-5);
  CHECK(max_abs_diff(dw, edw) < 1e-5);
  CHECK(max_abs_diff(db, edb) < 1e-5);
  // Without a bias and without dx (the first layer's input needs no gradient).
  t.ops.linear_forward(x.data(), nullptr, w.data(), nullptr, y.data(), rows, in, out, t.s);
  for (int i = 0; i < rows; ++i)
    for (int o = 0; o < out; ++o) expected[i * out + o] -= bias[o];
  CHECK(max_abs_diff(y, expected) < 1e-5);
  std::fill(dw.begin(), dw.end(), 99.f);
  t.ops.linear_backward(x.data(), nullptr, w.data(), dy.data(), nullptr, dw.data(), nullptr, rows, in, out, t.s);
  CHECK(max_abs_diff(dw, edw) < 1e-5);
}

TEST_CASE("cpu layer norm: PyTorch's formula forward, finite differences backward", "[compute][transformer]") {
  Ops t;
  const int rows = 5, width = 12;
  const float eps = 1e-6f;
  auto x = random_values(rows * width, 8, 2.f), gamma = random_values(width, 9), beta = random_values(width, 10);
  for (auto& g : gamma) g += 1.f;
  std::vector<float> y(rows * width), mean(rows), rstd(rows);
  const auto forward = [&] {
    t.ops.layer_norm_forward(x.data(), gamma.data(), beta.data(), y.data(), nullptr, mean.data(), rstd.data(), rows,
                             width, eps, t.s);
    return y;
  };
  forward();
  std::vector<double> expected(rows * width);
  for (int i = 0; i < rows; ++i) {
    double mu = 0, var = 0;
    for (int j = 0; j < width; ++j) mu += x[i * width + j];
    mu /= width;
    for (int j = 0; j < width; ++j) var += (x[i * width + j] - mu) * (x[i * width + j] - mu);
    var /= width;  // biased, as nn.LayerNorm
    for (int j = 0; j < width; ++j)
      expected[i * width + j] = (x[i * width + j] - mu) / std::sqrt(var + eps) * gamma[j] + beta[j];
    CHECK(mean[i] == Approx(mu).margin(1e-6));
    CHECK(rstd[i] == Approx(1 / std::sqrt(var + eps)).epsilon(1e-5));
  }
  CHECK(max_abs_diff(y, expected) < 1e-5);

  const auto r = random_values(rows * width, 11);
  std::vector<float> dx(rows * width), dgamma(width), dbeta(width);
  t.ops.layer_norm_backward(x.data(), gamma.data(), mean.data(), rstd.data(), r.data(), dx.data(), dgamma.data(),
                            dbeta.data(), rows, width, t.s);
  check_gradient("dx", x, dx, forward, r);
  check_gradient("dgamma", gamma, dgamma, forward, r);
  check_gradient("dbeta", beta, dbeta, forward, r);
}

TEST_CASE("cpu GELU: exact (erf) forward, finite differences backward", "[compute][transformer]") {
  Ops t;
  auto x = random_values(64, 12, 4.f);
  std::vector<float> y(x.size()), dx(x.size());
  const auto forward = [&] {
    t.ops.gelu_forward(x.data(), y.data(), nullptr, x.size(), t.s);
    return y;
  };
  forward();
  std::vector<double> expected(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) expected[i] = 0.5 * x[i] * (1 + std::erf(x[i] / std::sqrt(2.0)));
  CHECK(max_abs_diff(y, expected) < 1e-6);
  const auto r = random_values(x.size(), 13);
  t.ops.gelu_backward(x.data(), r.data(), dx.data(), x.size(), t.s);
  check_gradient("dx", x, dx, forward, r, 1e-3f);
  // The float erf (gelu_erf.hpp) over the whole range, tails included: within 1e-6 of
  // the double formula (relative where |y| > 1), and so is the slope.
  std::vector<float> sweep, ones;
  for (int i = -240000; i <= 240000; ++i) sweep.push_back(float(i) * 5e-5f);  // [-12, 12]
  ones.assign(sweep.size(), 1.f);
  std::vector<float> gy(sweep.size()), slope(sweep.size());
  t.ops.gelu_forward(sweep.data(), gy.data(), nullptr, sweep.size(), t.s);
  t.ops.gelu_backward(sweep.data(), ones.data(), slope.data(), sweep.size(), t.s);
  double worst_y = 0, worst_slope = 0;
  for (std::size_t i = 0; i < sweep.size(); ++i) {
    const double v = sweep[i], cdf = 0.5 * (1 + std::erf(v / std::sqrt(2.0)));
    const double want_y = v * cdf, want_slope = cdf + v * std::exp(-0.5 * v * v) / std::sqrt(2 * M_PI);
    worst_y = std::max(worst_y, std::fabs(gy[i] - want_y) / std::max(1.0, std::fabs(want_y)));
    worst_slope = std::max(worst_slope, std::fabs(slope[i] - want_slope));
  }
  CHECK(worst_y < 1e-6);
  CHECK(worst_slope < 1e-6);
}

TEST_CASE("cpu softmax: rows sum to 1, finite differences backward, in place", "[compute][transformer]") {
  Ops t;
  const int rows = 4, cols = 33;
  auto x = random_values(rows * cols, 14, 5.f);
  x[3] = 80.f;  // large logits stay finite (the maximum is subtracted)
  std::vector<float> y(x.size());
  const auto forward = [&] {
    t.ops.softmax_forward(x.data(), y.data(), rows, cols, t.s);
    return y;
  };
  forward();
  for (int i = 0; i < rows; ++i) {
    double sum = 0, top = x[i * cols];
    for (int j = 0; j < cols; ++j) top = std::max(top, double(x[i * cols + j]));
    for (int j = 0; j < cols; ++j) sum += std::exp(x[i * cols + j] - top);
    for (int j = 0; j < cols; ++j) CHECK(y[i * cols + j] == Approx(std::exp(x[i * cols + j] - top) / sum).margin(1e-7));
  }
  x[3] = 0.5f;
  forward();
  const auto r = random_values(x.size(), 15);
  std::vector<float> dx = r;
  t.ops.softmax_backward(y.data(), dx.data(), dx.data(), rows, cols, t.s);  // dx may be dy
  check_gradient("dx", x, dx, forward, r, 1e-2f);
  forward();  // y of x itself again (the differences left a perturbed one)
  auto in_place = x;
  t.ops.softmax_forward(in_place.data(), in_place.data(), rows, cols, t.s);
  CHECK(in_place == y);
}

TEST_CASE("cpu bias add, column sums, layer scale and residual add", "[compute][transformer]") {
  Ops t;
  const int rows = 7, width = 5;
  auto x = random_values(rows * width, 16), gamma = random_values(width, 17);
  const auto bias = random_values(width, 18);
  auto y = x;
  t.ops.add_bias(y.data(), bias.data(), rows, width, t.s);
  std::vector<double> sums(width, 0);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < width; ++j) {
      CHECK(y[i * width + j] == x[i * width + j] + bias[j]);
      sums[j] += x[i * width + j];
    }
  std::vector<float> colsum(width);
  t.ops.column_sums(x.data(), colsum.data(), rows, width, t.s);
  CHECK(max_abs_diff(colsum, sums) < 1e-6);

  std::vector<float> scaled(x.size());
  const auto forward = [&] {
    t.ops.layer_scale_forward(x.data(), gamma.data(), scaled.data(), rows, width, t.s);
    return scaled;
  };
  forward();
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < width; ++j) CHECK(scaled[i * width + j] == x[i * width + j] * gamma[j]);
  const auto r = random_values(x.size(), 19);
  std::vector<float> dx(x.size()), dgamma(width);
  t.ops.layer_scale_backward(x.data(), gamma.data(), r.data(), dx.data(), dgamma.data(), rows, width, t.s);
  check_gradient("dx", x, dx, forward, r);
  check_gradient("dgamma", gamma, dgamma, forward, r);

  std::vector<float> sum(x.size());
  t.ops.add(x.data(), y.data(), sum.data(), x.size(), t.s);
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(sum[i] == x[i] + y[i]);
  t.ops.add(sum.data(), x.data(), sum.data(), x.size(), t.s);  // y may be a
  CHECK(sum[3] == (x[3] + y[3]) + x[3]);
}

TEST_CASE("cpu attention: per-head softmax(q k^T / sqrt(d)) v, finite differences backward",
          "[compute][transformer]") {
  Ops t;
  AttentionShape a;
  a.batch = 2, a.tokens = 5, a.heads = 3, a.head_dim = 4;
  a.query_tokens = GENERATE(0, 2);  // as many queries as keys, or fewer (Hiera's pooled queries)
  const int W = a.width(), T = a.tokens, Q = a.queries(), D = a.head_dim;
  INFO(Q << " queries, " << T << " keys");
  const std::size_t n = std::size_t(a.batch) * T * W, nq = std::size_t(a.batch) * Q * W;
  auto q = random_values(nq, 20), k = random_values(n, 21), v = random_values(n, 22);
  std::vector<float> probs(a.probs_count()), out(nq);
  const auto forward = [&] {
    t.ops.attention_forward(q.data(), k.data(), v.data(), probs.data(), out.data(), a, t.s);
    return out;
  };
  forward();
  // Direct: heads are column blocks of width D.
  std::vector<double> expected(nq, 0), expected_probs(a.probs_count());
  for (int b = 0; b < a.batch; ++b)
    for (int h = 0; h < a.heads; ++h)
      for (int i = 0; i < Q; ++i) {
        std::vector<double> s(T);
        double top = -1e300, sum = 0;
        for (int j = 0; j < T; ++j) {
          double dot = 0;
          for (int d = 0; d < D; ++d) dot += double(q[(b * Q + i) * W + h * D + d]) * k[(b * T + j) * W + h * D + d];
          s[j] = dot / std::sqrt(double(D));
          top = std::max(top, s[j]);
        }
        for (int j = 0; j < T; ++j) sum += (s[j] = std::exp(s[j] - top));
        for (int j = 0; j < T; ++j) {
          const double p = s[j] / sum;
          expected_probs[((b * a.heads + h) * Q + i) * T + j] = p;
          for (int d = 0; d < D; ++d) expected[(b * Q + i) * W + h * D + d] += p * v[(b * T + j) * W + h * D + d];
        }
      }
  CHECK(max_abs_diff(out, expected) < 1e-5);
  CHECK(max_abs_diff(probs, expected_probs) < 1e-6);

  const auto r = random_values(nq, 23);
  std::vector<float> dq(nq), dk(n), dv(n), scratch(a.scratch_count());
  t.ops.attention_backward(q.data(), k.data(), v.data(), probs.data(), out.data(), r.data(), dq.data(), dk.data(),
                           dv.data(), scratch.data(), a, t.s);
  check_gradient("dq", q, dq, forward, r);
  check_gradient("dk", k, dk, forward, r);
  check_gradient("dv", v, dv, forward, r);
}

TEST_CASE("cpu rotary embedding: HF's x cos + rotate_half(x) sin on patch tokens; backward by finite differences",
          "[compute][transformer]") {
  Ops t;
  RotaryShape r;
  r.batch = 2, r.tokens = 7, r.prefix = 3, r.heads = 2, r.head_dim = 8;  // 4 patches after CLS + 2 registers
  const int W = r.heads * r.head_dim, half = r.head_dim / 2, P = r.patches();
  const std::size_t n = std::size_t(r.batch) * r.tokens * W;
  const auto angles = random_values(r.table_count(), 30, 3.f);
  std::vector<float> cos(angles.size()), sin(angles.size());
  for (std::size_t i = 0; i < angles.size(); ++i) cos[i] = std::cos(angles[i]), sin[i] = std::sin(angles[i]);
  auto x = random_values(n, 31);
  const auto forward = [&] {
    std::vector<float> y = x;
    t.ops.rotary_forward(y.data(), cos.data(), sin.data(), r, t.s);
    return y;
  };
  const auto y = forward();
  // Direct: the tiled [P, head_dim] tables of transformers, rotate_half = [-x2, x1].
  std::vector<double> expected(n);
  for (int b = 0; b < r.batch; ++b)
    for (int tok = 0; tok < r.tokens; ++tok)
      for (int h = 0; h < r.heads; ++h)
        for (int d = 0; d < r.head_dim; ++d) {
          const std::size_t at = (std::size_t(b) * r.tokens + tok) * W + h * r.head_dim;
          if (tok < r.prefix) {
            expected[at + d] = x[at + d];  // CLS and registers are not turned
            continue;
          }
          const std::size_t angle = std::size_t(tok - r.prefix) * half + d % half;
          const double rotated = d < half ? -double(x[at + d + half]) : double(x[at + d - half]);
          expected[at + d] = double(x[at + d]) * cos[angle] + rotated * sin[angle];
        }
  CHECK(max_abs_diff(y, expected) < 1e-6);
  CHECK(P == 4);

  // The backward of sum(g * y) is the inverse rotation of g; it undoes the forward.
  const auto g = random_values(n, 32);
  std::vector<float> dx = g;
  t.ops.rotary_backward(dx.data(), cos.data(), sin.data(), r, t.s);
  check_gradient("dx", x, dx, forward, g);
  std::vector<float> back = y;
  t.ops.rotary_backward(back.data(), cos.data(), sin.data(), r, t.s);
  std::vector<double> original(x.begin(), x.end());
  CHECK(max_abs_diff(back, original) < 1e-6);
  // An odd head width has no pairs.
  r.head_dim = 7;
  CHECK_THROWS(t.ops.rotary_forward(x.data(), cos.data(), sin.data(), r, t.s));
}

TEST_CASE("cpu transpose and patchify: index by index", "[compute][transformer]") {
  Ops t;
  // Tokens 1..N of [batch, T, C] (token 0 skipped, as the CLS token is) -> [batch, C, N].
  const int batch = 2, T = 7, C = 3, N = T - 1;
  const auto tokens = random_values(std::size_t(batch) * T * C, 24);
  std::vector<float> map(std::size_t(batch) * C * N);
  t.ops.transpose(tokens.data() + C, C, std::int64_t(T) * C, map.data(), std::int64_t(C) * N, batch, N, C, t.s);
  for (int b = 0; b < batch; ++b)
    for (int c = 0; c < C; ++c)
      for (int n = 0; n < N; ++n) CHECK(map[(b * C + c) * N + n] == tokens[(b * T + 1 + n) * C + c]);
  // And back into token rows 1..N, token 0 left as it was.
  std::vector<float> back(tokens.size(), -7.f);
  t.ops.transpose(map.data(), N, std::int64_t(C) * N, back.data() + C, std::int64_t(T) * C, batch, C, N, t.s);
  for (int b = 0; b < batch; ++b)
    for (int n = 0; n < T; ++n)
      for (int c = 0; c < C; ++c) CHECK(back[(b * T + n) * C + c] == (n == 0 ? -7.f : tokens[(b * T + n) * C + c]));

  const int channels = 3, H = 8, W = 12, P = 4;
  const auto images = random_values(std::size_t(batch) * channels * H * W, 25);
  std::vector<float> patches(images.size());
  t.ops.patchify(images.data(), patches.data(), batch, channels, H, W, P, t.s);
  const int row = channels * P * P;
  for (int b = 0; b < batch; ++b)
    for (int c = 0; c < channels; ++c)
      for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
          const int token = (y / P) * (W / P) + x / P, within = (c * P + y % P) * P + x % P;
          CHECK(patches[(std::size_t(b) * (H / P) * (W / P) + token) * row + within] ==
                images[((std::size_t(b) * channels + c) * H + y) * W + x]);
        }
}

TEST_CASE("cpu window partition: SAM's pad, view and permute, and back", "[compute][transformer][sam]") {
  Ops t;
  // A 5x7 grid in windows of 3: padded to 6x9, 2x3 windows of 9 rows each.
  const int batch = 2, H = 5, W = 7, C = 4, ws = 3;
  const WindowGrid g{batch, H, W, ws};
  REQUIRE(g.windows_h() == 2);
  REQUIRE(g.windows_w() == 3);
  REQUIRE(g.window_rows() == std::int64_t(batch) * 6 * 9);
  const auto tokens = random_values(std::size_t(batch) * H * W * C, 26);
  std::vector<float> windows(std::size_t(g.window_rows()) * C, -3.f);
  t.ops.window_partition(tokens.data(), windows.data(), nullptr, g, C, t.s);
  // F.pad to [B, 6, 9, C], view(B, 2, 3, 3, 3, C), permute(0, 1, 3, 2, 4, 5): window
  // (wy, wx) row (iy, ix) is padded token (wy * 3 + iy, wx * 3 + ix).
  int padding = 0;
  for (int b = 0; b < batch; ++b)
    for (int wy = 0; wy < 2; ++wy)
      for (int wx = 0; wx < 3; ++wx)
        for (int iy = 0; iy < ws; ++iy)
          for (int ix = 0; ix < ws; ++ix) {
            const int y = wy * ws + iy, x = wx * ws + ix;
            const std::size_t row = (((std::size_t(b) * 2 + wy) * 3 + wx) * ws + iy) * ws + ix;
            padding += y >= H || x >= W;
            for (int c = 0; c < C; ++c) {
              const float want = (y < H && x < W) ? tokens[((std::size_t(b) * H + y) * W + x) * C + c] : 0.f;
              CHECK(windows[row * C + c] == want);
            }
          }
  CHECK(padding == batch * (6 * 9 - H * W));
  // With a fill row, the padding rows are copies of it and the tokens' rows as before.
  const std::vector<float> fill = {1.5f, -2.f, 0.25f, 7.f};
  std::vector<float> filled(windows.size(), -3.f);
  t.ops.window_partition(tokens.data(), filled.data(), fill.data(), g, C, t.s);
  for (long long r = 0; r < g.window_rows(); ++r)
    for (int c = 0; c < C; ++c)
      CHECK(filled[std::size_t(r) * C + c] == (g.token_of(r) < 0 ? fill[std::size_t(c)] : windows[std::size_t(r) * C + c]));
  // Unpartition crops the padding: the tokens come back bit for bit.
  std::vector<float> back(tokens.size(), -5.f);
  t.ops.window_unpartition(windows.data(), back.data(), g, C, t.s);
  CHECK(back == tokens);
  // A grid that the windows tile exactly has no padding rows.
  const WindowGrid exact{1, 6, 3, 3};
  CHECK(exact.window_rows() == exact.token_rows());
  for (long long r = 0; r < exact.window_rows(); ++r) CHECK(exact.window_of(exact.token_of(r)) == r);
}

TEST_CASE("cpu Hiera max pool: max_pool2d(2, 2) of the token grid, PyTorch's first tap on ties",
          "[compute][transformer][sam2]") {
  Ops t;
  const int batch = 2, H = 5, W = 6, C = 3;  // an odd height: floor pooling drops the last row
  const TokenPoolGrid g{batch, H, W};
  REQUIRE(g.out_rows() == batch * 2 * 3);
  auto x = random_values(std::size_t(batch) * H * W * C, 30);
  // Ties: in output (0, 0, 1) of image 0, channel 1, taps 1 and 3 hold the same max.
  const auto at = [&](int b, int y, int xx, int c) -> float& { return x[((std::size_t(b) * H + y) * W + xx) * C + c]; };
  at(0, 0, 3, 1) = 5.f, at(0, 1, 3, 1) = 5.f;
  std::vector<float> y(std::size_t(g.out_rows()) * C, -9.f);
  t.ops.max_pool_forward(x.data(), y.data(), g, C, t.s);
  for (int b = 0; b < batch; ++b)
    for (int oy = 0; oy < 2; ++oy)
      for (int ox = 0; ox < 3; ++ox)
        for (int c = 0; c < C; ++c) {
          float want = at(b, 2 * oy, 2 * ox, c);
          for (int ty = 0; ty < 2; ++ty)
            for (int tx = 0; tx < 2; ++tx) want = std::max(want, at(b, 2 * oy + ty, 2 * ox + tx, c));
          CHECK(y[((std::size_t(b) * 2 + oy) * 3 + ox) * C + c] == want);
        }
  // Backward: each output's gradient goes to one tap, the first that holds the max.
  const auto dy = random_values(y.size(), 31);
  std::vector<float> dx(x.size(), -9.f);
  t.ops.max_pool_backward(x.data(), dy.data(), dx.data(), g, C, t.s);
  double total_in = 0, total_out = 0;
  for (float d : dx) total_in += d;
  for (float d : dy) total_out += d;
  CHECK(total_in == Approx(total_out).epsilon(1e-6));
  CHECK(dx[((std::size_t(0) * H + 0) * W + 3) * C + 1] == dy[(0 * 3 + 1) * C + 1]);  // tap 1 of the tie
  CHECK(dx[((std::size_t(0) * H + 1) * W + 3) * C + 1] == 0.f);                     // tap 3: not the first
  for (int b = 0; b < batch; ++b)
    for (int xx = 0; xx < W; ++xx)
      for (int c = 0; c < C; ++c) CHECK(dx[((std::size_t(b) * H + 4) * W + xx) * C + c] == 0.f);  // the dropped row
  // Away from ties, the backward is the forward's derivative.
  auto smooth = random_values(std::size_t(batch) * 4 * 6 * C, 32);
  const TokenPoolGrid even{batch, 4, 6};
  std::vector<float> pooled(std::size_t(even.out_rows()) * C), d_smooth(smooth.size());
  const auto r = random_values(pooled.size(), 33);
  t.ops.max_pool_backward(smooth.data(), r.data(), d_smooth.data(), even, C, t.s);
  check_gradient("max pool", smooth, d_smooth, [&] {
    t.ops.max_pool_forward(smooth.data(), pooled.data(), even, C, t.s);
    return pooled;
  }, r, 1e-4f);
}

TEST_CASE("cpu Hiera patch rows: a zero-padded strided Conv2d as a Linear", "[compute][transformer][sam2]") {
  Ops t;
  // Hiera's 7x7, stride 4, padding 3 patch embedding on 2 images of 3 x 12 x 8.
  const ConvPatchGrid g{2, 3, 12, 8, 7, 4, 3};
  REQUIRE(g.out_h() == 3);
  REQUIRE(g.out_w() == 2);
  const auto images = random_values(std::size_t(2) * 3 * 12 * 8, 34);
  std::vector<float> rows(std::size_t(g.rows()) * g.row_width(), -9.f);
  t.ops.conv_patches(images.data(), rows.data(), g, t.s);
  const int out = 5;
  const auto w = random_values(std::size_t(out) * g.row_width(), 35);
  std::vector<float> y(std::size_t(g.rows()) * out);
  t.ops.linear_forward(rows.data(), nullptr, w.data(), nullptr, y.data(), int(g.rows()), g.row_width(), out, t.s);
  for (int b = 0; b < 2; ++b)
    for (int oy = 0; oy < 3; ++oy)
      for (int ox = 0; ox < 2; ++ox)
        for (int o = 0; o < out; ++o) {
          double want = 0;
          for (int c = 0; c < 3; ++c)
            for (int ky = 0; ky < 7; ++ky)
              for (int kx = 0; kx < 7; ++kx) {
                const int iy = oy * 4 - 3 + ky, ix = ox * 4 - 3 + kx;
                if (iy < 0 || iy >= 12 || ix < 0 || ix >= 8) continue;
                want += double(w[((std::size_t(o) * 3 + c) * 7 + ky) * 7 + kx]) *
                        images[((std::size_t(b) * 3 + c) * 12 + iy) * 8 + ix];
              }
          CHECK(y[((std::size_t(b) * 3 + oy) * 2 + ox) * out + o] == Approx(want).margin(1e-5));
        }
}
