// The unsupervised keypoint losses on the CPU backend (lightning-pose TemporalLoss
// and PCALoss): hand-computed values, masking, per-keypoint epsilon, the frame-pixel
// scale, and central finite differences of the gradient, which is added into dkeypoints.
#include <catch2/catch.hpp>

#include <algorithm>  // std::find
#include <cmath>
#include <functional>
#include <vector>

#include "compute/backend.hpp"
#include "compute/pca_loss_table_buffers.hpp"  // PcaLossTableBuffers
#include "test_util.hpp"
#include "util/error.hpp"            // SystemError
#include "util/symmetric_eigen.hpp"  // orthonormal components for the random cases

using namespace trainer::compute;
using namespace trainer::compute::test;

namespace {

// Central differences of loss(keypoints) in float, step h, against `grad`.
void check_gradient(const std::function<float(const std::vector<float>&)>& loss,
                    const std::vector<float>& kp, const std::vector<float>& grad, float h) {
  double worst = 0;
  for (std::size_t i = 0; i < kp.size(); ++i) {
    auto plus = kp, minus = kp;
    plus[i] += h;
    minus[i] -= h;
    const double fd = (double(loss(plus)) - loss(minus)) / (double(plus[i]) - minus[i]);
    INFO("coordinate " << i << ": analytic " << grad[i] << ", finite difference " << fd);
    CHECK(std::fabs(fd - grad[i]) < 2e-4 + 1e-3 * std::fabs(fd));
    worst = std::max(worst, std::fabs(fd - grad[i]));
  }
  CHECK(worst < 2e-4);
}

// The C leading eigenvectors of a random symmetric matrix: orthonormal rows.
std::vector<float> random_components(int C, int D, unsigned seed) {
  auto r = random_vector(std::size_t(D) * D, seed);
  std::vector<double> a(r.size());
  for (int i = 0; i < D; ++i)
    for (int j = 0; j < D; ++j) a[i * D + j] = double(r[i * D + j]) + r[j * D + i];
  const auto e = trainer::symmetric_eigen(a, D);
  return std::vector<float>(e.vectors.begin(), e.vectors.begin() + std::size_t(C) * D);
}

}  // namespace

TEST_CASE("temporal_loss: hand-computed value, epsilon per keypoint, scale, masking", "[compute]") {
  auto be = make_cpu_backend(1);
  Stream& s = be->default_stream();
  // 3 frames, 2 keypoints, network pixels; scale (2, 0.5) into frame pixels.
  // k0 moves (3, 4) then 0; k1 moves 0 then (6, 8) in frame pixels.
  const std::vector<float> kp{0, 0, 1, 1, /**/ 1.5f, 8, 1, 1, /**/ 1.5f, 8, 4, 17};
  const std::vector<float> eps{1, 2};
  float loss = -1;
  // relu(5 - 1) + relu(0 - 2) + relu(0 - 1) + relu(10 - 2) = 12, over 4 entries.
  be->temporal_loss(kp.data(), nullptr, 3, 2, eps.data(), 0.f, 2.f, 0.5f, &loss, nullptr, 1.f, s);
  CHECK(loss == Approx(3.0));

  // Gradient, added to ones with grad_scale 2: each active move's unit vector (0.6,
  // 0.8) / 4 entries, times the scale back to network pixels: (0.3, 0.1).
  std::vector<float> d(12, 1.f);
  be->temporal_loss(kp.data(), nullptr, 3, 2, eps.data(), 0.f, 2.f, 0.5f, &loss, d.data(), 2.f, s);
  const std::vector<float> expected{1 - 0.6f, 1 - 0.2f, 1, 1,  // frame 0: k0 leaves
                                    1 + 0.6f, 1 + 0.2f, 1 - 0.6f, 1 - 0.2f,
                                    1, 1, 1 + 0.6f, 1 + 0.2f};
  for (int i = 0; i < 12; ++i) CHECK(d[i] == Approx(expected[i]));

  // Confidence of k1 in frame 2 below the threshold: its second move drops out.
  const std::vector<float> conf{0.9f, 0.9f, 0.9f, 0.9f, 0.9f, 0.01f};
  std::fill(d.begin(), d.end(), 0.f);
  be->temporal_loss(kp.data(), conf.data(), 3, 2, eps.data(), 0.05f, 2.f, 0.5f, &loss, d.data(), 1.f, s);
  CHECK(loss == Approx(1.0));
  CHECK(d[8] == 0.f);
  CHECK(d[10] == 0.f);
  CHECK(d[2] == 0.f);
  CHECK(d[4] == Approx(0.3f));
  // Equal to the threshold is kept (lightning-pose masks confidence < threshold).
  be->temporal_loss(kp.data(), conf.data(), 3, 2, eps.data(), 0.01f, 2.f, 0.5f, &loss, nullptr, 1.f, s);
  CHECK(loss == Approx(3.0));

  // No move at all: zero norm, zero gradient (not NaN).
  const std::vector<float> still(12, 5.f), zero_eps{0, 0};
  std::fill(d.begin(), d.end(), 0.f);
  be->temporal_loss(still.data(), nullptr, 3, 2, zero_eps.data(), 0.f, 1.f, 1.f, &loss, d.data(), 1.f, s);
  CHECK(loss == 0.f);
  for (float v : d) CHECK(v == 0.f);
  // One frame: nothing to compare (lightning-pose: NaN), loss 0.
  be->temporal_loss(kp.data(), nullptr, 1, 2, eps.data(), 0.f, 1.f, 1.f, &loss, d.data(), 1.f, s);
  CHECK(loss == 0.f);
}

TEST_CASE("temporal_loss: gradient matches finite differences and adds up", "[compute]") {
  auto be = make_cpu_backend(1);
  Stream& s = be->default_stream();
  const int S = 6, K = 5;
  auto kp = random_vector(std::size_t(S) * K * 2, 11, 0.f, 20.f);
  auto conf = random_vector(std::size_t(S) * K, 12, 0.f, 1.f);
  const std::vector<float> eps{0.f, 3.f, 5.f, 8.f, 1.f};
  const float sx = 1.7f, sy = 0.8f, thr = 0.2f;
  auto loss_of = [&](const std::vector<float>& k) {
    float l = 0;
    be->temporal_loss(k.data(), conf.data(), S, K, eps.data(), thr, sx, sy, &l, nullptr, 1.f, s);
    return l;
  };
  const auto base = random_vector(kp.size(), 13);
  std::vector<float> d = base;
  float loss = 0;
  be->temporal_loss(kp.data(), conf.data(), S, K, eps.data(), thr, sx, sy, &loss, d.data(), 0.5f, s);
  CHECK(loss == loss_of(kp));
  CHECK(loss > 0.f);
  std::vector<float> grad(kp.size());
  for (std::size_t i = 0; i < kp.size(); ++i) grad[i] = (d[i] - base[i]) / 0.5f;
  check_gradient(loss_of, kp, grad, 1e-2f);
}

TEST_CASE("pca_loss: hand-computed singleview case", "[compute]") {
  auto be = make_cpu_backend(1);
  Stream& s = be->default_stream();
  // One keypoint, D = 2, the kept component is the x axis: the error is |y - mean y|.
  PcaLossTableBuffers t(*be, {10.f, 20.f}, {1.f, 0.f}, {0, 1}, 1, 1, 1.f, PcaCentering::none, s);
  const std::vector<float> kp{13, 24, /**/ 10, 20.5f};  // residuals (0, 4) and (0, 0.5)
  float loss = -1;
  std::vector<float> d{1, 1, 1, 1};
  be->pca_loss(kp.data(), 2, 1, t.tables(), 1.f, 1.f, &loss, d.data(), 1.f, s);
  CHECK(loss == Approx(1.5));  // (relu(4 - 1) + relu(0.5 - 1)) / 2
  CHECK(d == std::vector<float>{1, 1.5f, 1, 1});
  // Scale (2, 0.5) maps network (6.5, 48) to frame (13, 24): same loss, gradient
  // times the scale.
  const std::vector<float> net{6.5f, 48, 5, 41};
  std::fill(d.begin(), d.end(), 0.f);
  be->pca_loss(net.data(), 2, 1, t.tables(), 2.f, 0.5f, &loss, d.data(), 1.f, s);
  CHECK(loss == Approx(1.5));
  CHECK(d[1] == Approx(0.25f));
  CHECK(d[0] == 0.f);
}

TEST_CASE("pca_loss: multiview rows, a repeated column and centring, finite differences", "[compute]") {
  auto be = make_cpu_backend(1);
  Stream& s = be->default_stream();
  const int F = 4, K = 6;
  struct Case {
    const char* name;
    std::vector<int> gather;
    int rows, C;
    PcaCentering centering = PcaCentering::none;
  };
  const Case cases[] = {
      // two views, keypoints (0, 3), (1, 4), (2, 5): rows of view0 x, y, view1 x, y
      {"multiview", {0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11}, 3, 3},
      // singleview over keypoints 4, 1, 4: a coordinate used twice collects both
      {"singleview, repeated keypoint", {8, 9, 2, 3, 8, 9}, 1, 2},
      // centering_method over keypoints 0, 2, 3, 5 (even count) and 0, 2, 3, 4, 5 (odd)
      {"singleview, mean centring", {0, 1, 4, 5, 6, 7, 10, 11}, 1, 2, PcaCentering::mean},
      {"singleview, median centring, even", {0, 1, 4, 5, 6, 7, 10, 11}, 1, 2, PcaCentering::median},
      {"singleview, median centring, odd", {0, 1, 4, 5, 6, 7, 8, 9, 10, 11}, 1, 3, PcaCentering::median},
  };
  unsigned seed = 40;
  for (const Case& c : cases) {
    INFO(c.name);
    const int D = int(c.gather.size()) / c.rows;
    auto mean = random_vector(D, seed++, 5.f, 15.f);
    auto comps = random_components(c.C, D, seed++);
    PcaLossTableBuffers t(*be, mean, comps, c.gather, c.rows, K, 1.5f, c.centering, s);
    auto kp = random_vector(std::size_t(F) * K * 2, seed++, 0.f, 12.f);
    const float sx = 1.3f, sy = 0.9f;
    auto loss_of = [&](const std::vector<float>& k) {
      float l = 0;
      be->pca_loss(k.data(), F, K, t.tables(), sx, sy, &l, nullptr, 1.f, s);
      return l;
    };
    const auto base = random_vector(kp.size(), seed++);
    std::vector<float> d = base;
    float loss = 0;
    be->pca_loss(kp.data(), F, K, t.tables(), sx, sy, &loss, d.data(), 2.f, s);
    CHECK(loss == loss_of(kp));
    CHECK(loss > 0.f);
    std::vector<float> grad(kp.size());
    for (std::size_t i = 0; i < kp.size(); ++i) grad[i] = (d[i] - base[i]) / 2.f;
    check_gradient(loss_of, kp, grad, 1e-2f);
    // Coordinates outside the table get no gradient (keypoints 0, 2, 3, 5 in the
    // repeated-keypoint case), centred or not.
    for (int f = 0; f < F; ++f)
      for (int i = 0; i < 2 * K; ++i)
        if (std::find(c.gather.begin(), c.gather.end(), i) == c.gather.end())
          CHECK(d[f * K * 2 + i] == base[f * K * 2 + i]);
  }
}

TEST_CASE("pca_loss: tables that disagree with the keypoints are internal errors", "[compute]") {
  auto be = make_cpu_backend(1);
  Stream& s = be->default_stream();
  CHECK_THROWS_AS(PcaLossTableBuffers(*be, {0, 0}, {1, 0}, {0, 2}, 1, 1, 1.f, PcaCentering::none, s), trainer::SystemError);
  CHECK_THROWS_AS(PcaLossTableBuffers(*be, {0, 0}, {1, 0}, {0, 1, 2}, 1, 2, 1.f, PcaCentering::none, s), trainer::SystemError);
  PcaLossTableBuffers t(*be, {0, 0}, {1, 0}, {0, 1}, 1, 1, 1.f, PcaCentering::none, s);
  std::vector<float> kp(4);
  float loss;
  CHECK_THROWS_AS(be->pca_loss(kp.data(), 1, 2, t.tables(), 1.f, 1.f, &loss, nullptr, 1.f, s),
                  trainer::SystemError);
}
