// The CPU backend's emulation of mixed precision: each convolution op with bf16 /
// fp16 must equal, bit for bit, the hand-composed recipe on an fp32 backend:
// round both operands, convolve in fp32, round the result (the deconvolution bias
// and its gradient in fp32). This is the reference the GPU tests hold cuDNN to.
#include <catch2/catch.hpp>

#include <cmath>   // std::isinf, std::isfinite
#include <limits>  // std::numeric_limits

#include "compute/backend.hpp"
#include "test_util.hpp"

using namespace trainer::compute;
using namespace trainer::compute::test;

namespace {

std::vector<float> rounded(Precision p, std::vector<float> v) {
  for (auto& x : v) x = round_to_precision(p, x);
  return v;
}

ConvGeometry geometry(int cin, int cout, int k, int stride, int pad, int output_padding = 0) {
  ConvGeometry g;
  g.in_channels = cin;
  g.out_channels = cout;
  g.kernel = k;
  g.stride = stride;
  g.pad = pad;
  g.output_padding = output_padding;
  return g;
}

}  // namespace

TEST_CASE("cpu mixed precision: convolutions equal the rounding recipe", "[compute][precision]") {
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    INFO("precision " << precision_name(p));
    auto mixed = make_cpu_backend(2, p);
    auto fp32 = make_cpu_backend(2);
    CHECK(mixed->precision() == p);
    CHECK(mixed->description().find("emulated") != std::string::npos);
    Stream& ms = mixed->default_stream();
    Stream& fs = fp32->default_stream();

    const ConvGeometry g = geometry(5, 7, 3, 2, 1);
    const Shape4 xs{2, 5, 11, 10}, ys{2, 7, g.conv_out(11), g.conv_out(10)};
    const auto x = random_vector(xs.numel(), 1, -3.f, 3.f);
    const auto w = random_vector(std::size_t(7) * 5 * 9, 2);
    const auto dy = random_vector(ys.numel(), 3);
    const auto xr = rounded(p, x), wr = rounded(p, w), dyr = rounded(p, dy);

    std::vector<float> y(ys.numel()), y_ref(ys.numel());
    mixed->conv2d_forward({x.data(), xs}, w.data(), {y.data(), ys}, g, ms);
    fp32->conv2d_forward({xr.data(), xs}, wr.data(), {y_ref.data(), ys}, g, fs);
    CHECK(y == rounded(p, y_ref));

    std::vector<float> dx(xs.numel()), dx_ref(xs.numel());
    mixed->conv2d_backward_data({dy.data(), ys}, w.data(), {dx.data(), xs}, g, ms);
    fp32->conv2d_backward_data({dyr.data(), ys}, wr.data(), {dx_ref.data(), xs}, g, fs);
    CHECK(dx == rounded(p, dx_ref));

    std::vector<float> dw(w.size()), dw_ref(w.size());
    mixed->conv2d_backward_weights({x.data(), xs}, {dy.data(), ys}, dw.data(), g, ms);
    fp32->conv2d_backward_weights({xr.data(), xs}, {dyr.data(), ys}, dw_ref.data(), g, fs);
    CHECK(dw == rounded(p, dw_ref));

    // The 16-bit result really differs from fp32, by about the type's precision.
    std::vector<float> y32(ys.numel());
    fp32->conv2d_forward({x.data(), xs}, w.data(), {y32.data(), ys}, g, fs);
    const double err = rel_error(y, y32);
    CHECK(err > 0);
    CHECK(err < (p == Precision::bf16 ? 2e-2 : 2e-3));
    // The inputs are not modified.
    CHECK(x == random_vector(xs.numel(), 1, -3.f, 3.f));
    CHECK(w == random_vector(std::size_t(7) * 5 * 9, 2));
  }
}

TEST_CASE("cpu mixed precision: transposed convolutions equal the rounding recipe", "[compute][precision]") {
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    INFO("precision " << precision_name(p));
    auto mixed = make_cpu_backend(2, p);
    auto fp32 = make_cpu_backend(2);
    Stream& ms = mixed->default_stream();
    Stream& fs = fp32->default_stream();

    const ConvGeometry g = geometry(6, 4, 3, 2, 1, 1);
    const Shape4 xs{2, 6, 7, 9}, ys{2, 4, g.deconv_out(7), g.deconv_out(9)};
    const auto x = random_vector(xs.numel(), 11);
    const auto w = random_vector(std::size_t(6) * 4 * 9, 12);
    const auto bias = random_vector(4, 13);
    const auto dy = random_vector(ys.numel(), 14);
    const auto xr = rounded(p, x), wr = rounded(p, w), dyr = rounded(p, dy);

    // Forward: round(deconv(round x, round w)) + bias, the bias added in fp32.
    std::vector<float> y(ys.numel()), y_ref(ys.numel());
    mixed->deconv2d_forward({x.data(), xs}, w.data(), bias.data(), {y.data(), ys}, g, ms);
    fp32->deconv2d_forward({xr.data(), xs}, wr.data(), nullptr, {y_ref.data(), ys}, g, fs);
    y_ref = rounded(p, y_ref);
    const long plane = long(ys.plane());
    for (std::size_t i = 0; i < y_ref.size(); ++i) y_ref[i] += bias[(long(i) / plane) % ys.c];
    CHECK(y == y_ref);

    std::vector<float> dx(xs.numel()), dx_ref(xs.numel());
    mixed->deconv2d_backward_data({dy.data(), ys}, w.data(), {dx.data(), xs}, g, ms);
    fp32->deconv2d_backward_data({dyr.data(), ys}, wr.data(), {dx_ref.data(), xs}, g, fs);
    CHECK(dx == rounded(p, dx_ref));

    // Weight gradient from the rounded operands; bias gradient from the fp32 dy.
    std::vector<float> dw(w.size()), dw_ref(w.size()), db(4), db_ref(4);
    mixed->deconv2d_backward_weights({x.data(), xs}, {dy.data(), ys}, dw.data(), db.data(), g, ms);
    fp32->deconv2d_backward_weights({xr.data(), xs}, {dyr.data(), ys}, dw_ref.data(), nullptr, g, fs);
    std::vector<float> unused(w.size());
    fp32->deconv2d_backward_weights({x.data(), xs}, {dy.data(), ys}, unused.data(), db_ref.data(), g, fs);
    CHECK(dw == rounded(p, dw_ref));
    CHECK(db == db_ref);
  }
}

TEST_CASE("cpu fp16 convolution overflows to inf past 65504, bf16 does not", "[compute][precision]") {
  const ConvGeometry g = geometry(4, 2, 1, 1, 0);
  const Shape4 xs{1, 4, 2, 2}, ys{1, 2, 2, 2};
  const std::vector<float> x(xs.numel(), 256.f);
  const std::vector<float> w(8, 128.f);  // each output: 4 * 256 * 128 = 131072 > 65504
  std::vector<float> y(ys.numel());
  auto half = make_cpu_backend(1, Precision::fp16);
  half->conv2d_forward({x.data(), xs}, w.data(), {y.data(), ys}, g, half->default_stream());
  for (float v : y) CHECK(std::isinf(v));
  auto bf16 = make_cpu_backend(1, Precision::bf16);
  bf16->conv2d_forward({x.data(), xs}, w.data(), {y.data(), ys}, g, bf16->default_stream());
  for (float v : y) CHECK(v == 131072.f);  // 2^17: exact in bf16
  // Gradients too small for fp16 vanish without loss scaling (why 16-mixed scales).
  const std::vector<float> tiny(xs.numel(), 1e-8f), one(8, 1.f);
  half->conv2d_forward({tiny.data(), xs}, one.data(), {y.data(), ys}, g, half->default_stream());
  for (float v : y) CHECK(v == 0.f);
}

TEST_CASE("cpu unscale_and_check multiplies and flags inf/NaN", "[compute][precision]") {
  auto be = make_cpu_backend(2);
  Stream& s = be->default_stream();
  std::vector<float> g = random_vector(200000, 5, -1000.f, 1000.f);
  const std::vector<float> before = g;
  float flag = 0.f;
  const float inv1024 = 1.f / 1024, half = 0.5f, one = 1.f;  // read from "device" memory
  be->unscale_and_check(g.data(), g.size(), &inv1024, &flag, s);
  CHECK(flag == 0.f);
  for (std::size_t i = 0; i < g.size(); i += 997) CHECK(g[i] == before[i] / 1024);
  g[123456] = std::numeric_limits<float>::infinity();
  be->unscale_and_check(g.data(), g.size(), &half, &flag, s);
  CHECK(flag == 1.f);
  // A later clean range does not clear the flag.
  std::vector<float> clean{1.f, 2.f};
  be->unscale_and_check(clean.data(), clean.size(), &half, &flag, s);
  CHECK(flag == 1.f);
  CHECK(clean == std::vector<float>{0.5f, 1.f});
  std::vector<float> nan{1.f, std::numeric_limits<float>::quiet_NaN()};
  float flag2 = 0.f;
  be->unscale_and_check(nan.data(), nan.size(), &one, &flag2, s);
  CHECK(flag2 == 1.f);
}

TEST_CASE("cpu scale_by reads its factor when it runs", "[compute][precision]") {
  auto be = make_cpu_backend(2);
  std::vector<float> x = random_vector(100000, 3, -1.f, 1.f);
  std::vector<float> expected = x;
  be->scale(expected.data(), 4096.f, expected.size(), be->default_stream());
  const float factor = 4096.f;
  be->scale_by(x.data(), x.size(), &factor, be->default_stream());
  CHECK(x == expected);
}

TEST_CASE("loss scale update follows GradScaler: backoff on inf, growth after the interval, no overflow",
          "[compute][precision]") {
  auto be = make_cpu_backend(1);
  Stream& s = be->default_stream();
  LossScaleRule rule;
  rule.growth_interval = 3;
  float state[kLossScaleSlots] = {};
  state[kLossScale] = 1024.f;
  const auto step = [&](bool inf) {
    state[kLossScaleFoundInf] = inf ? 1.f : 0.f;
    be->update_loss_scale(state, rule, s);
  };
  step(false);
  step(false);
  CHECK(state[kLossScale] == 1024.f);
  CHECK(state[kLossScaleGrowthTracker] == 2.f);
  step(false);  // the third finite step in a row doubles it
  CHECK(state[kLossScale] == 2048.f);
  CHECK(state[kLossScaleInverse] == 1.f / 2048);
  CHECK(state[kLossScaleGrowthTracker] == 0.f);
  step(false);
  step(true);  // backoff, the tracker restarts, the step counts as skipped
  CHECK(state[kLossScale] == 1024.f);
  CHECK(state[kLossScaleInverse] == 1.f / 1024);
  CHECK(state[kLossScaleGrowthTracker] == 0.f);
  CHECK(state[kLossScaleSkipped] == 1.f);
  CHECK(state[kLossScaleFoundInf] == 1.f);  // left for the optimizer to read
  // Growth that would overflow keeps the scale (torch keeps the old one).
  state[kLossScale] = std::numeric_limits<float>::max();
  for (int i = 0; i < 3; ++i) step(false);
  CHECK(state[kLossScale] == std::numeric_limits<float>::max());
  CHECK(state[kLossScaleGrowthTracker] == 0.f);
  // GradScaler's defaults: 2000 finite steps double 65536.
  LossScaleRule defaults;
  float d[kLossScaleSlots] = {65536.f};
  for (int i = 0; i < 1999; ++i) be->update_loss_scale(d, defaults, s);
  CHECK(d[kLossScale] == 65536.f);
  be->update_loss_scale(d, defaults, s);
  CHECK(d[kLossScale] == 131072.f);
}
