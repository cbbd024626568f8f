#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "compute/backend.hpp"
#include "compute/keypoint_rule.hpp"  // kUniformTargetMark
#include "compute/losses/heatmap_loss_registry.hpp"  // heatmap_losses, parse_heatmap_loss
#include "test_util.hpp"

using namespace trainer::compute;
using namespace trainer::compute::test;

TEST_CASE("normalize_images: uint8 NHWC to normalized float NCHW, gray replicated", "[compute]") {
  auto be = make_cpu_backend(2);
  const float mean[3] = {0.485f, 0.456f, 0.406f}, stdv[3] = {0.229f, 0.224f, 0.225f};
  std::vector<std::uint8_t> rgb{0, 128, 255, 10, 20, 30};  // N=1, H=1, W=2, C=3
  std::vector<float> out(6);
  be->normalize_images(rgb.data(), 3, {out.data(), {1, 3, 1, 2}}, mean, stdv, be->default_stream());
  CHECK(out[0] == Approx((0 / 255.f - mean[0]) / stdv[0]));
  CHECK(out[1] == Approx((10 / 255.f - mean[0]) / stdv[0]));
  CHECK(out[2] == Approx((128 / 255.f - mean[1]) / stdv[1]));
  CHECK(out[5] == Approx((30 / 255.f - mean[2]) / stdv[2]));
  std::vector<std::uint8_t> gray{51, 204};
  be->normalize_images(gray.data(), 1, {out.data(), {1, 3, 1, 2}}, mean, stdv, be->default_stream());
  for (int c = 0; c < 3; ++c) {
    CHECK(out[c * 2] == Approx((51 / 255.f - mean[c]) / stdv[c]));
    CHECK(out[c * 2 + 1] == Approx((204 / 255.f - mean[c]) / stdv[c]));
  }
}

TEST_CASE("heatmap targets: normalized Gaussians, lightning-pose validity rules", "[compute]") {
  auto be = make_cpu_backend(2);
  const int H = 8, W = 10;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // (x, y) in heatmap pixels
  std::vector<float> kp{3.3f, 2.7f,  nan, 1.f,  -1.f, 9.f,   11.f, 0.f,
                        -1.5f, 2.f,  3.f, 9.5f, 11.2f, 1.f,  0.f, nan};
  const int K = int(kp.size() / 2);
  std::vector<float> t(std::size_t(K) * H * W, 9.f), mask(K, 9.f);
  be->heatmap_targets(kp.data(), {t.data(), {1, K, H, W}}, 1.25f, mask.data(),
                      be->default_stream());
  const std::vector<float> expect_mask{1, 0, 1, 1, 0, 0, 0, 0};
  CHECK(mask == expect_mask);
  for (int k = 0; k < K; ++k) {
    double sum = 0;
    for (int i = 0; i < H * W; ++i) sum += t[std::size_t(k) * H * W + i];
    if (expect_mask[k] == 1.f) CHECK(sum == Approx(1.0).epsilon(1e-5));
    else CHECK(sum == 0.0);
  }
  // shape: ratio of two pixels is the Gaussian ratio; peak next to (3.3, 2.7)
  auto at = [&](int k, int r, int c) { return double(t[(std::size_t(k) * H + r) * W + c]); };
  const double s2 = 2 * 1.25 * 1.25;
  const double g33 = std::exp(-((3 - 3.3) * (3 - 3.3) + (3 - 2.7) * (3 - 2.7)) / s2);
  const double g00 = std::exp(-((0 - 3.3) * (0 - 3.3) + (0 - 2.7) * (0 - 2.7)) / s2);
  CHECK(at(0, 3, 3) / at(0, 0, 0) == Approx(g33 / g00).epsilon(1e-4));
  double best = -1;
  int br = -1, bc = -1;
  for (int r = 0; r < H; ++r)
    for (int c = 0; c < W; ++c)
      if (at(0, r, c) > best) best = at(0, r, c), br = r, bc = c;
  CHECK(br == 3);
  CHECK(bc == 3);
}

TEST_CASE("spatial softmax: temperature multiplies (kornia), backward by finite differences",
          "[compute]") {
  auto be = make_cpu_backend(2);
  Stream& st = be->default_stream();
  const Shape4 s{2, 3, 4, 5};
  auto x = random_vector(s.numel(), 61, -2.f, 2.f);
  for (float temp : {1.f, 2.5f}) {
    std::vector<float> y(s.numel());
    be->spatial_softmax_forward({x.data(), s}, temp, {y.data(), s}, st);
    for (int p = 0; p < 6; ++p) {
      double z = 0;
      for (int i = 0; i < 20; ++i) z += std::exp(double(temp) * x[p * 20 + i]);
      for (int i = 0; i < 20; ++i)
        REQUIRE(y[p * 20 + i] == Approx(std::exp(double(temp) * x[p * 20 + i]) / z).epsilon(1e-5));
    }
    auto r = random_vector(s.numel(), 62);
    std::vector<float> dx(s.numel());
    be->spatial_softmax_backward({y.data(), s}, {r.data(), s}, temp, {dx.data(), s}, st);
    auto loss = [&](const std::vector<float>& xx) {
      std::vector<float> yy(s.numel());
      be->spatial_softmax_forward({xx.data(), s}, temp, {yy.data(), s}, st);
      return dot(yy, r);
    };
    for (std::size_t i = 0; i < x.size(); i += 7) {
      auto xp = x, xm = x;
      xp[i] += 1e-2f;
      xm[i] -= 1e-2f;
      CHECK(dx[i] == Approx((loss(xp) - loss(xm)) / 2e-2).margin(1e-3));
    }
  }
}

namespace {
// Softmaxed random predictions and targets [2, 3, 4, 4]; keypoint 1 of sample 0
// is excluded (all-zero target, mask 0).
struct LossInputs {
  Shape4 s{2, 3, 4, 4};
  std::vector<float> t, p, mask{1, 0, 1, 1, 1, 1};
  explicit LossInputs(Backend& be) : t(s.numel()), p(s.numel()) {
    auto raw_t = random_vector(s.numel(), 71, -2.f, 2.f), raw_p = random_vector(s.numel(), 72, -2.f, 2.f);
    be.spatial_softmax_forward({raw_t.data(), s}, 1.f, {t.data(), s}, be.default_stream());
    be.spatial_softmax_forward({raw_p.data(), s}, 1.f, {p.data(), s}, be.default_stream());
    for (int i = 16; i < 32; ++i) t[i] = 0.f;
  }
};
}  // namespace

TEST_CASE("heatmap losses mse, kl, js: lightning-pose values", "[compute]") {
  auto be = make_cpu_backend(2);
  Stream& st = be->default_stream();
  const LossInputs in(*be);
  const Shape4 s = in.s;
  const auto &p = in.p, &t = in.t, &mask = in.mask;
  const int hw = 16;
  for (const char* name : {"mse", "kl", "js"}) {
    INFO("loss " << name);
    const std::string type = name;
    // reference: 0.5 * mean over counted keypoints of the per-keypoint value
    double ref = 0;
    for (int k = 0; k < 6; ++k) {
      if (!mask[k]) continue;
      double acc = 0;
      for (int j = 0; j < hw; ++j) {
        const double pv = p[k * hw + j], tv = t[k * hw + j];
        if (type == "mse") {
          acc += (pv - tv) * (pv - tv) / hw * hw;  // mean squared error * H*W
        } else {
          const double pe = pv + 1e-10, te = tv + 1e-10, m = (pe + te) / 2;
          acc += type == "kl" ? te * std::log(te / pe)
                              : 0.5 * te * std::log(te / m) + 0.5 * pe * std::log(pe / m);
        }
      }
      ref += acc;
    }
    ref = 0.5 * ref / 5;
    float loss = -1;
    be->heatmap_loss({p.data(), s}, {t.data(), s}, mask.data(), parse_heatmap_loss(type), &loss, nullptr,
                     1.f, st);
    CHECK(loss == Approx(ref).epsilon(1e-5));
  }
}

// Found through the registry: a new loss gets these checks without a test edit.
TEST_CASE("every registered heatmap loss: masking, gradients, nothing counted", "[compute]") {
  auto be = make_cpu_backend(2);
  Stream& st = be->default_stream();
  const LossInputs in(*be);
  const Shape4 s = in.s;
  const auto &p = in.p, &t = in.t, &mask = in.mask;
  REQUIRE(!heatmap_losses().empty());
  for (const HeatmapLoss* type : heatmap_losses()) {
    INFO("loss " << type->name());
    float loss = -1;
    std::vector<float> dp(s.numel(), 9.f);
    be->heatmap_loss({p.data(), s}, {t.data(), s}, mask.data(), *type, &loss, dp.data(), 3.f, st);
    CHECK(std::isfinite(loss));
    // a null mask uses lightning-pose's own rule (all-zero target excluded): same value
    float loss2 = -1;
    be->heatmap_loss({p.data(), s}, {t.data(), s}, nullptr, *type, &loss2, nullptr, 1.f, st);
    CHECK(loss2 == Approx(loss).epsilon(1e-6));
    for (int j = 16; j < 32; ++j) REQUIRE(dp[j] == 0.f);  // excluded keypoint: no gradient
    // gradient of loss * loss_scale (3) by central differences, in double through the op
    for (int j = 0; j < int(s.numel()); j += 5) {
      if (j >= 16 && j < 32) continue;
      const float h = 2e-4f;
      auto pp = p, pm = p;
      pp[j] += h;
      pm[j] -= h;
      float lp = 0, lm = 0;
      be->heatmap_loss({pp.data(), s}, {t.data(), s}, mask.data(), *type, &lp, nullptr, 1.f, st);
      be->heatmap_loss({pm.data(), s}, {t.data(), s}, mask.data(), *type, &lm, nullptr, 1.f, st);
      CHECK(dp[j] == Approx(3.0 * (double(lp) - lm) / (2 * h)).margin(1e-2 * std::max(1.0, std::fabs(double(dp[j])))));
    }
    // nothing counted: zero loss, zero gradient (lightning-pose would give NaN)
    std::vector<float> none(6, 0.f), dz(s.numel(), 9.f);
    float zero = -1;
    be->heatmap_loss({p.data(), s}, {t.data(), s}, none.data(), *type, &zero, dz.data(), 1.f, st);
    CHECK(zero == 0.f);
    CHECK(dz == std::vector<float>(s.numel(), 0.f));
  }
}

namespace {
// One-hot heatmap [1, 1, n, n] with a 1 at (px, py); soft-argmax coords and confidence.
void one_hot_argmax(Backend& be, int n, int px, int py, int d, float temp, float& x, float& y,
                    float& conf) {
  std::vector<float> hm(std::size_t(n) * n, 0.f);
  hm[std::size_t(py) * n + px] = 1.f;
  float coords[2];
  be.soft_argmax({hm.data(), {1, 1, n, n}}, d, temp, coords, &conf, be.default_stream());
  x = coords[0];
  y = coords[1];
}
}  // namespace

TEST_CASE("soft-argmax: lightning-pose run_subpixelmaxima test vectors", "[compute]") {
  auto be = make_cpu_backend(2);
  float x, y, c;
  for (int d : {1, 2}) {
    for (int p : {2, 4}) {
      INFO("d " << d << " peak " << p);
      one_hot_argmax(*be, 16, p, p, d, 1000.f, x, y, c);
      CHECK(x == Approx(p << d).margin(1e-3));
      CHECK(y == Approx(p << d).margin(1e-3));
      CHECK(c == Approx(1.0).margin(1e-4));
    }
    one_hot_argmax(*be, 16, 0, 0, d, 1000.f, x, y, c);
    CHECK(std::fabs(x) < 0.5);
    CHECK(std::fabs(y) < 0.5);
  }
  // d = 3: the exact grid offset (2^3 - 1) / 2 = 3.5 (lightning-pose subtracts 2.5)
  one_hot_argmax(*be, 8, 2, 3, 3, 1000.f, x, y, c);
  CHECK(x == Approx(16).margin(1e-3));
  CHECK(y == Approx(24).margin(1e-3));
  // temperatures at (4, 4), d = 2
  one_hot_argmax(*be, 16, 4, 4, 2, 100.f, x, y, c);
  CHECK(x == Approx(16).margin(1e-3));
  CHECK(y == Approx(16).margin(1e-3));
  CHECK(c == Approx(1.0).margin(1e-3));
  one_hot_argmax(*be, 16, 4, 4, 2, 10.f, x, y, c);
  CHECK(std::fabs(x - 16) > 0.5);
  CHECK(c < 0.5);
  // batches: each (n, k) plane independently, peaks at different places (2 or more pixels
  // from the border: nearer, the clamped bicubic taps and zero-padded blur shift it slightly)
  std::vector<float> hm(2 * 3 * 8 * 8, 0.f), coords(12), conf(6);
  for (int k = 0; k < 6; ++k) hm[std::size_t(k) * 64 + (2 + k % 4) * 8 + (5 - k % 4)] = 1.f;
  be->soft_argmax({hm.data(), {2, 3, 8, 8}}, 2, 1000.f, coords.data(), conf.data(),
                  be->default_stream());
  for (int k = 0; k < 6; ++k) {
    CHECK(coords[2 * k] == Approx(4 * (5 - k % 4)).margin(1e-3));
    CHECK(coords[2 * k + 1] == Approx(4 * (2 + k % 4)).margin(1e-3));
    CHECK(conf[k] == Approx(1.0).margin(1e-4));
  }
}

TEST_CASE("heatmap targets: a keypoint marked missing gets the uniform target and counts", "[compute]") {
  // lightning-pose's uniform_heatmaps_for_nan_keypoints (generate_heatmaps, visibility 1).
  auto be = make_cpu_backend(2);
  const int H = 6, W = 8;
  const float mark = trainer::compute::kUniformTargetMark;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> kp{3.f, 2.f, mark, mark, nan, nan, 40.f, 2.f};
  const int K = 4;
  std::vector<float> t(std::size_t(K) * H * W, 9.f), mask(K, 9.f);
  be->heatmap_targets(kp.data(), {t.data(), {1, K, H, W}}, 1.25f, mask.data(), be->default_stream());
  CHECK(mask == std::vector<float>{1, 1, 0, 0});
  for (int i = 0; i < H * W; ++i) {
    CHECK(t[std::size_t(H * W + i)] == float(1.0 / (H * W)));  // uniform
    CHECK(t[std::size_t(2 * H * W + i)] == 0.f);               // NaN: no target
  }
  // The uniform plane counts in the loss: the MSE of a flat prediction against it is 0,
  // so the mean over the two counted planes is half the Gaussian plane's.
  std::vector<float> pred(t.size(), float(1.0 / (H * W))), loss(1), dpred(t.size());
  const auto& mse = parse_heatmap_loss("mse");
  be->heatmap_loss({pred.data(), {1, K, H, W}}, {t.data(), {1, K, H, W}}, mask.data(), mse, loss.data(), dpred.data(),
                   1.f, be->default_stream());
  std::vector<float> loss_one(1), mask_one{1, 0, 0, 0};
  be->heatmap_loss({pred.data(), {1, K, H, W}}, {t.data(), {1, K, H, W}}, mask_one.data(), mse, loss_one.data(),
                   nullptr, 1.f, be->default_stream());
  CHECK(loss[0] == Approx(loss_one[0] / 2).epsilon(1e-6));
  for (int i = 0; i < H * W; ++i) CHECK(dpred[std::size_t(H * W + i)] == 0.f);  // flat matches uniform
}

TEST_CASE("soft-argmax backward matches central differences of the coordinates", "[compute]") {
  // The unsupervised losses differentiate the keypoints through the upsampling and the
  // tempered softmax. A moderate temperature keeps the finite differences well-conditioned.
  auto be = make_cpu_backend(2);
  const Shape4 s{1, 2, 6, 5};
  auto hm = random_vector(s.numel(), 77, 0.f, 1.f);
  const std::vector<float> dcoords{0.7f, -1.3f, 0.4f, 0.9f};
  for (int d : {0, 1, 2}) {
    INFO("downsample factor " << d);
    const float temperature = 4.f;
    std::vector<float> grad(s.numel());
    be->soft_argmax_backward({hm.data(), s}, d, temperature, dcoords.data(), {grad.data(), s},
                             be->default_stream());
    auto objective = [&](const std::vector<float>& maps) {
      std::vector<float> coords(4);
      be->soft_argmax({maps.data(), s}, d, temperature, coords.data(), nullptr, be->default_stream());
      double total = 0;
      for (int i = 0; i < 4; ++i) total += double(dcoords[i]) * coords[i];
      return total;
    };
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < hm.size(); ++i) {
      auto plus = hm, minus = hm;
      const float h = 1e-2f;
      plus[i] += h;
      minus[i] -= h;
      const double numeric = (objective(plus) - objective(minus)) / (2.0 * h);
      worst = std::max(worst, std::fabs(numeric - grad[i]));
      scale = std::max(scale, std::fabs(numeric));
    }
    CHECK(scale > 1e-2);  // the check is not vacuous
    CHECK(worst < 2e-3 * scale + 1e-4);
  }
}

TEST_CASE("soft-argmax of a diverged network's NaN heatmap gives NaN keypoints, defined", "[compute]") {
  // Casting the NaN expectation to the window's integer centre was undefined behaviour
  // (UBSan stopped a NaN-loss test there); the keypoints and confidence are NaN.
  auto be = make_cpu_backend(1);
  const Shape4 s{1, 2, 8, 8};
  std::vector<float> maps(s.numel(), 0.f);
  for (int i = 0; i < 64; ++i) maps[std::size_t(i)] = std::numeric_limits<float>::quiet_NaN();  // plane 0 only
  std::vector<float> coords(4, 0.f), confidence(2, 0.f);
  be->soft_argmax({maps.data(), s}, 2, 1.f, coords.data(), confidence.data(), be->default_stream());
  CHECK(std::isnan(coords[0]));
  CHECK(std::isnan(coords[1]));
  CHECK(std::isnan(confidence[0]));
  CHECK(std::isfinite(coords[2]));  // the other plane is untouched
  CHECK(std::isfinite(confidence[1]));
}
