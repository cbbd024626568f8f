// The CPU MBConv ops (compute/mbconv_ops.hpp), the twins of kernels/mbconv.cu:
// depthwise convolutions against the backend's dense convolution with a
// block-diagonal filter (oneDNN, another implementation), SiLU and the gate against
// finite differences in double, the row mean, and stochastic depth's draws.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <vector>

#include "compute/backend.hpp"
#include "compute/mbconv_rule.hpp"
#include "test_util.hpp"

using namespace trainer::compute;
using namespace trainer::compute::test;

namespace {

// The dense [C, C, k, k] filter whose off-diagonal blocks are zero: a dense
// convolution with it is the depthwise convolution with w [C, 1, k, k].
std::vector<float> block_diagonal(const std::vector<float>& w, int c, int k) {
  std::vector<float> dense(std::size_t(c) * c * k * k, 0.f);
  for (int o = 0; o < c; ++o)
    for (int t = 0; t < k * k; ++t) dense[(std::size_t(o) * c + o) * k * k + t] = w[std::size_t(o) * k * k + t];
  return dense;
}

}  // namespace

TEST_CASE("depthwise convolution: forward and both gradients equal a dense convolution's with a block-diagonal filter",
          "[compute][mbconv]") {
  auto be = make_cpu_backend(2);
  auto& ops = be->mbconv_ops();
  Stream& s = be->default_stream();
  struct Case {
    int n, c, h, w, k, stride;
  };
  for (const Case t : {Case{2, 5, 9, 8, 3, 1}, Case{2, 4, 10, 7, 5, 2}, Case{1, 3, 6, 6, 3, 2}, Case{3, 2, 5, 9, 5, 1}}) {
    INFO("n " << t.n << " c " << t.c << " " << t.h << "x" << t.w << " k " << t.k << " stride " << t.stride);
    ConvGeometry g;
    g.in_channels = g.out_channels = t.c;
    g.kernel = t.k, g.stride = t.stride, g.pad = (t.k - 1) / 2;
    const Shape4 xs{t.n, t.c, t.h, t.w}, ys{t.n, t.c, g.conv_out(t.h), g.conv_out(t.w)};
    const auto x = random_vector(xs.numel(), 1);
    const auto w = random_vector(std::size_t(t.c) * t.k * t.k, 2);
    const auto dy = random_vector(ys.numel(), 3);
    const auto dense = block_diagonal(w, t.c, t.k);

    std::vector<float> y(ys.numel()), y_ref(ys.numel());
    ops.depthwise_forward({x.data(), xs}, w.data(), {y.data(), ys}, g, s);
    be->conv2d_forward({x.data(), xs}, dense.data(), {y_ref.data(), ys}, g, s);
    CHECK(rel_error(y, y_ref) < 1e-6);
    CHECK(rel_error(y, ref_conv(x, xs, dense, g)) < 1e-6);

    std::vector<float> dx(xs.numel(), 7.f), dx_ref(xs.numel());
    ops.depthwise_backward_data({dy.data(), ys}, w.data(), {dx.data(), xs}, g, s);
    be->conv2d_backward_data({dy.data(), ys}, dense.data(), {dx_ref.data(), xs}, g, s);
    CHECK(rel_error(dx, dx_ref) < 1e-6);

    std::vector<float> dw(w.size(), 7.f), dw_dense(dense.size());
    ops.depthwise_backward_weights({x.data(), xs}, {dy.data(), ys}, dw.data(), g, s);
    be->conv2d_backward_weights({x.data(), xs}, {dy.data(), ys}, dw_dense.data(), g, s);
    std::vector<float> dw_ref(w.size());
    for (int o = 0; o < t.c; ++o)
      for (int i = 0; i < t.k * t.k; ++i) dw_ref[std::size_t(o) * t.k * t.k + i] = dw_dense[(std::size_t(o) * t.c + o) * t.k * t.k + i];
    CHECK(rel_error(dw, dw_ref) < 1e-5);
  }
  // Shapes that do not fit the geometry are internal errors, before anything is written.
  ConvGeometry g;
  g.in_channels = g.out_channels = 3, g.kernel = 3, g.stride = 2, g.pad = 1;
  std::vector<float> x(2 * 3 * 8 * 8), w(27), y(2 * 3 * 8 * 8);
  CHECK_THROWS(ops.depthwise_forward({x.data(), {2, 3, 8, 8}}, w.data(), {y.data(), {2, 3, 8, 8}}, g, s));
}

TEST_CASE("SiLU and the squeeze-excitation gate: values and gradients against finite differences",
          "[compute][mbconv]") {
  auto be = make_cpu_backend(2);
  auto& ops = be->mbconv_ops();
  Stream& s = be->default_stream();
  const auto silu64 = [](double v) { return v / (1.0 + std::exp(-v)); };

  const auto x = random_vector(257, 4, -6.f, 6.f);
  const auto dy = random_vector(x.size(), 5);
  std::vector<float> y(x.size()), dx(x.size());
  ops.silu_forward(x.data(), y.data(), x.size(), s);
  ops.silu_backward(x.data(), dy.data(), dx.data(), x.size(), s);
  for (std::size_t i = 0; i < x.size(); ++i) {
    CHECK(y[i] == Approx(silu64(x[i])).epsilon(1e-6).margin(1e-7));
    const double h = 1e-4, slope = (silu64(x[i] + h) - silu64(x[i] - h)) / (2 * h);
    CHECK(dx[i] == Approx(dy[i] * slope).epsilon(1e-5).margin(1e-6));
  }

  // The gate: loss = <dy, x * sigmoid(z[row])>; its gradients in x and z.
  const int rows = 6, width = 11;
  const auto gx = random_vector(std::size_t(rows) * width, 6);
  const auto z = random_vector(rows, 7, -3.f, 3.f);
  const auto gdy = random_vector(gx.size(), 8);
  std::vector<float> gy(gx.size()), gdx(gx.size()), dz(rows);
  ops.gate_forward(gx.data(), z.data(), gy.data(), rows, width, s);
  ops.gate_backward(gx.data(), z.data(), gdy.data(), gdx.data(), dz.data(), rows, width, s);
  const auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  for (int r = 0; r < rows; ++r) {
    double row_dot = 0;
    for (int j = 0; j < width; ++j) {
      const std::size_t i = std::size_t(r) * width + j;
      CHECK(gy[i] == Approx(gx[i] * sig(z[r])).epsilon(1e-6));
      CHECK(gdx[i] == Approx(gdy[i] * sig(z[r])).epsilon(1e-6));
      row_dot += double(gdy[i]) * gx[i];
    }
    const double h = 1e-4, slope = (sig(z[r] + h) - sig(z[r] - h)) / (2 * h);
    CHECK(dz[r] == Approx(row_dot * slope).epsilon(1e-4).margin(1e-6));
  }
}

TEST_CASE("row mean: the pooled mean, and a backward that adds its share to every element", "[compute][mbconv]") {
  auto be = make_cpu_backend(2);
  auto& ops = be->mbconv_ops();
  Stream& s = be->default_stream();
  const int rows = 5, width = 13;
  const auto x = random_vector(std::size_t(rows) * width, 9);
  std::vector<float> mean(rows);
  ops.row_mean_forward(x.data(), mean.data(), rows, width, s);
  const auto dmean = random_vector(rows, 10);
  std::vector<float> dx(x.size(), 0.5f);
  ops.row_mean_backward_add(dmean.data(), dx.data(), rows, width, s);
  for (int r = 0; r < rows; ++r) {
    double sum = 0;
    for (int j = 0; j < width; ++j) sum += x[std::size_t(r) * width + j];
    CHECK(mean[r] == Approx(sum / width).epsilon(1e-6));
    for (int j = 0; j < width; ++j) CHECK(dx[std::size_t(r) * width + j] == Approx(0.5 + dmean[r] / width).epsilon(1e-6));
  }
  // scale_rows: one factor per row, in place too.
  std::vector<float> scaled(x), factors{0.f, 1.25f, 1.f, 0.f, 2.f};
  ops.scale_rows(scaled.data(), factors.data(), scaled.data(), rows, width, s);
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < width; ++j) CHECK(scaled[std::size_t(r) * width + j] == x[std::size_t(r) * width + j] * factors[r]);
}

TEST_CASE("stochastic depth factors: 0 or 1/(1-p), at rate p, the same for the same key, salt and row",
          "[compute][mbconv]") {
  auto be = make_cpu_backend(2);
  auto& ops = be->mbconv_ops();
  Stream& s = be->default_stream();
  const float key[2] = {12345.f, 777.f}, p = 0.2f;
  const int rows = 20000;
  std::vector<float> a(rows), b(rows), other(rows);
  ops.stochastic_depth_factors(key, 3, p, a.data(), rows, s);
  ops.stochastic_depth_factors(key, 3, p, b.data(), rows, s);
  ops.stochastic_depth_factors(key, 4, p, other.data(), rows, s);
  CHECK(a == b);
  CHECK(a != other);  // another layer (salt) draws otherwise
  int dropped = 0;
  for (int r = 0; r < rows; ++r) {
    REQUIRE((a[r] == 0.f || a[r] == 1.f / (1.f - p)));
    dropped += a[r] == 0.f;
    CHECK(a[r] == stochastic_depth_factor(key[0], key[1], 3, std::uint32_t(r), p));  // the kernels' rule
  }
  // Binomial(20000, 0.2): standard deviation about 57.
  CHECK(std::abs(dropped - rows * 0.2) < 5 * 57);
  // p = 0 keeps every row with factor 1.
  ops.stochastic_depth_factors(key, 3, 0.f, a.data(), 64, s);
  for (int r = 0; r < 64; ++r) CHECK(a[r] == 1.f);
}
