// The fit of lightning-pose's KeypointPCA (train/keypoint_pca.hpp) on synthetic
// labels with a known low-rank structure. Parity with numpy / LP's own steps is in
// tests/parity/unsupervised_parity.py.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "../runtime/user_error_matchers.hpp"  // require_user_error
#include "compute/backend.hpp"  // make_cpu_backend, for the tables test
#include "train/keypoint_pca.hpp"

using namespace trainer::train;
using trainer::test::require_user_error;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Frames of K keypoints whose 2K coordinates are mean + basis * latent (rank
// `rank`) + noise, in pixel-like magnitudes. Returns [N, K, 2] and the basis [rank, 2K].
std::vector<float> low_rank_labels(int N, int K, int rank, double noise, unsigned seed,
                                   std::vector<double>& basis) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> g;
  const int D = 2 * K;
  basis.assign(std::size_t(rank) * D, 0.0);
  for (double& b : basis) b = g(rng);
  std::vector<double> mean(D);
  for (double& m : mean) m = 100 + 50 * g(rng);
  std::vector<float> out(std::size_t(N) * D);
  for (int n = 0; n < N; ++n) {
    std::vector<double> z(rank);
    for (double& v : z) v = 20 * g(rng);
    for (int d = 0; d < D; ++d) {
      double v = mean[d] + noise * g(rng);
      for (int r = 0; r < rank; ++r) v += basis[r * D + d] * z[r];
      out[std::size_t(n) * D + d] = float(v);
    }
  }
  return out;
}

// || P_fit - P_true || (max entry) of the projectors onto the fitted components'
// span and onto the rows of `basis` (made orthonormal by Gram-Schmidt).
double subspace_gap(const KeypointPca& pca, std::vector<double> basis, int rank) {
  const int D = pca.dims;
  for (int r = 0; r < rank; ++r) {
    for (int q = 0; q < r; ++q) {
      double dot = 0;
      for (int d = 0; d < D; ++d) dot += basis[r * D + d] * basis[q * D + d];
      for (int d = 0; d < D; ++d) basis[r * D + d] -= dot * basis[q * D + d];
    }
    double norm = 0;
    for (int d = 0; d < D; ++d) norm += basis[r * D + d] * basis[r * D + d];
    for (int d = 0; d < D; ++d) basis[r * D + d] /= std::sqrt(norm);
  }
  double worst = 0;
  for (int a = 0; a < D; ++a)
    for (int b = 0; b < D; ++b) {
      double pf = 0, pt = 0;
      for (int c = 0; c < pca.components_kept; ++c)
        pf += pca.components[c * D + a] * pca.components[c * D + b];
      for (int r = 0; r < rank; ++r) pt += basis[r * D + a] * basis[r * D + b];
      worst = std::max(worst, std::fabs(pf - pt));
    }
  return worst;
}

// The per-pair reprojection errors of the rows without NaN, recomputed here.
std::vector<double> reprojection_errors(const KeypointPca& pca, const std::vector<float>& kp) {
  const int D = pca.dims, R = pca.rows_per_frame, K2 = 2 * pca.num_keypoints;
  std::vector<double> errors;
  for (std::size_t f = 0; f < kp.size() / K2; ++f)
    for (int r = 0; r < R; ++r) {
      std::vector<double> c(D);
      bool ok = true;
      for (int d = 0; d < D; ++d) {
        const float v = kp[f * K2 + pca.gather[r * D + d]];
        ok = ok && !std::isnan(v);
        c[d] = v - pca.mean[d];
      }
      if (!ok) continue;
      std::vector<double> e = c;
      for (int j = 0; j < pca.components_kept; ++j) {
        double p = 0;
        for (int d = 0; d < D; ++d) p += pca.components[j * D + d] * c[d];
        for (int d = 0; d < D; ++d) e[d] -= p * pca.components[j * D + d];
      }
      for (int d = 0; d < D; d += 2) errors.push_back(std::hypot(e[d], e[d + 1]));
    }
  return errors;
}

}  // namespace

TEST_CASE("keypoint PCA: singleview fit recovers a rank-2 subspace", "[train]") {
  std::vector<double> basis;
  const auto kp = low_rank_labels(200, 4, 2, 0.05, 1, basis);
  KeypointPcaSettings s;
  s.components_to_keep = 0.95;
  const KeypointPca pca = fit_keypoint_pca(kp, 4, s);
  CHECK(pca.dims == 8);
  CHECK(pca.rows == 200);
  CHECK(pca.complete_rows == 200);
  CHECK(pca.rows_per_frame == 1);
  CHECK(pca.gather == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(pca.components_kept == 2);
  CHECK(pca.explained_variance_ratio[0] + pca.explained_variance_ratio[1] > 0.9999);
  double total = 0;
  for (int d = 0; d < 8; ++d) {
    total += pca.explained_variance_ratio[d];
    if (d) CHECK(pca.explained_variance[d] <= pca.explained_variance[d - 1]);
    CHECK(pca.explained_variance[d] >= 0);
  }
  CHECK(total == Approx(1.0));
  CHECK(subspace_gap(pca, basis, 2) < 1e-3);
  // Orthonormal components; sklearn's sign: each row's largest entry is positive.
  for (int i = 0; i < 2; ++i) {
    double norm = 0, biggest = 0;
    for (int d = 0; d < 8; ++d) {
      norm += pca.components[i * 8 + d] * pca.components[i * 8 + d];
      if (std::fabs(pca.components[i * 8 + d]) > std::fabs(biggest)) biggest = pca.components[i * 8 + d];
    }
    CHECK(norm == Approx(1.0));
    CHECK(biggest > 0);
  }
  // Noise 0.05 per coordinate: the 99th percentile pair error is a small multiple.
  CHECK(pca.epsilon > 0.05);
  CHECK(pca.epsilon < 0.5);
  CHECK(pca.epsilon == pca.empirical_epsilon);
  CHECK(pca.warnings.empty());
}

TEST_CASE("keypoint PCA: centering_method removes each frame's translation", "[train]") {
  // A rank-1 pose change, then a large random translation per frame. Uncentred, the
  // translation takes two more components. Centred by the mean or the median, the
  // fit equals the fit of the untranslated poses; mean centring keeps the pose
  // change linear (one component), and its rows, so its mean, sum to zero in x and y.
  std::vector<double> basis;
  const auto poses = low_rank_labels(150, 5, 1, 0.01, 7, basis);
  auto kp = poses;
  std::mt19937 rng(8);
  std::normal_distribution<double> g;
  for (std::size_t f = 0; f < 150; ++f) {
    const double tx = 80 * g(rng), ty = 60 * g(rng);
    for (int k = 0; k < 5; ++k) {
      kp[f * 10 + 2 * k] += float(tx);
      kp[f * 10 + 2 * k + 1] += float(ty);
    }
  }
  KeypointPcaSettings s;
  s.components_to_keep = 0.999;
  CHECK(fit_keypoint_pca(kp, 5, s).components_kept >= 3);
  for (auto centering : {trainer::compute::PcaCentering::mean, trainer::compute::PcaCentering::median}) {
    INFO("centering " << int(centering));
    s.centering = centering;
    const KeypointPca pca = fit_keypoint_pca(kp, 5, s);
    const KeypointPca still = fit_keypoint_pca(poses, 5, s);
    CHECK(pca.centering == centering);
    CHECK(pca.components_kept == still.components_kept);
    for (int d = 0; d < 10; ++d) {
      CHECK(pca.mean[d] == Approx(still.mean[d]).margin(1e-3));
      CHECK(pca.explained_variance_ratio[d] == Approx(still.explained_variance_ratio[d]).margin(1e-5));
    }
    CHECK(pca.epsilon == Approx(still.epsilon).margin(1e-3));
    if (centering == trainer::compute::PcaCentering::mean) {
      CHECK(pca.components_kept == 1);
      double sx = 0, sy = 0;
      for (int k = 0; k < 5; ++k) {
        sx += pca.mean[2 * k];
        sy += pca.mean[2 * k + 1];
      }
      CHECK(std::fabs(sx) < 1e-6);
      CHECK(std::fabs(sy) < 1e-6);
    }
  }
  // A frame with one NaN keypoint gets a NaN centre: the whole frame drops out of the
  // mean (torch's mean and quantile propagate NaN).
  s.centering = trainer::compute::PcaCentering::median;
  const KeypointPca before = fit_keypoint_pca(kp, 5, s);
  auto with_nan = kp;
  with_nan[3 * 10 + 4] = with_nan[3 * 10 + 5] = kNaN;
  const KeypointPca after = fit_keypoint_pca(with_nan, 5, s);
  CHECK(after.complete_rows == before.complete_rows - 1);
  // Multiview rows are never centred (lightning-pose's _multiview_format).
  KeypointPcaSettings m;
  m.mode = PcaMode::multiview;
  m.mirrored_column_matches = {{0, 1}, {2, 3}};
  m.components_to_keep = 3;
  m.centering = trainer::compute::PcaCentering::mean;
  CHECK(fit_keypoint_pca(kp, 5, m).centering == trainer::compute::PcaCentering::none);
}

TEST_CASE("keypoint PCA: components_to_keep as a count or a fraction", "[train]") {
  std::vector<double> basis;
  const auto kp = low_rank_labels(100, 4, 3, 0.5, 2, basis);
  KeypointPcaSettings s;
  auto kept = [&](ComponentsToKeep keep) {
    s.components_to_keep = keep;
    return fit_keypoint_pca(kp, 4, s).components_kept;
  };
  CHECK(kept(5) == 5);
  CHECK(kept(8) == 8);
  CHECK(kept(1.0) == 8);
  CHECK(kept(0.0) == 1);
  // A fraction keeps the first count whose cumulative ratio reaches it.
  s.components_to_keep = 1;
  const auto ratio = fit_keypoint_pca(kp, 4, s).explained_variance_ratio;
  CHECK(kept(ratio[0]) == 1);
  CHECK(kept(ratio[0] + ratio[1] * 0.5) == 2);
  CHECK(kept(ratio[0] + ratio[1] + ratio[2] * 0.999) == 3);
  require_user_error([&] { kept(9); }, "exceeding the maximum value of 8");
  require_user_error([&] { kept(0); }, "at least 1");
  require_user_error([&] { kept(1.5); }, "between 0.0 and 1.0");
  require_user_error([&] { kept(-0.1); }, "between 0.0 and 1.0");
}

TEST_CASE("keypoint PCA: columns_for_singleview_pca selects and orders keypoints", "[train]") {
  std::vector<double> basis;
  const auto kp = low_rank_labels(60, 5, 2, 0.1, 3, basis);
  KeypointPcaSettings s;
  s.columns_for_singleview_pca = std::vector<int>{3, 0};
  s.components_to_keep = 2;
  const auto pca = fit_keypoint_pca(kp, 5, s);
  CHECK(pca.dims == 4);
  CHECK(pca.gather == std::vector<int>{6, 7, 0, 1});
  double m = 0;
  for (int n = 0; n < 60; ++n) m += kp[n * 10 + 6];
  CHECK(pca.mean[0] == Approx(m / 60).epsilon(1e-12));
  s.columns_for_singleview_pca = std::vector<int>{0, 5};
  require_user_error([&] { fit_keypoint_pca(kp, 5, s); }, "keypoint index 5");
  s.columns_for_singleview_pca = std::vector<int>{};
  require_user_error([&] { fit_keypoint_pca(kp, 5, s); }, "empty");
}

TEST_CASE("keypoint PCA: NaN labels follow np.nanmean and np.ma.cov", "[train]") {
  // One keypoint (D = 2); row 1 has y missing. (numpy: cov [[3.7, 5.1667],
  // [5.1667, 10.9167]], positive definite, so no eigenvalue is clipped.)
  const std::vector<float> kp{1, 2, /**/ 2, kNaN, /**/ 3, 7, /**/ 4, 3, /**/ 6, 9};
  KeypointPcaSettings s;
  s.components_to_keep = 1;
  const auto pca = fit_keypoint_pca(kp, 1, s);
  const double mx = 3.2, my = 5.25;
  CHECK(pca.mean[0] == Approx(mx).epsilon(1e-14));
  CHECK(pca.mean[1] == Approx(my).epsilon(1e-14));
  // ma.cov: every column centred by its own masked mean, masked entries 0, each
  // entry over (jointly valid rows - 1).
  const double xs[] = {1, 3, 4, 6}, ys[] = {2, 7, 3, 9};
  double cxx = (2 - mx) * (2 - mx), cyy = 0, cxy = 0;
  for (int i = 0; i < 4; ++i) {
    cxx += (xs[i] - mx) * (xs[i] - mx);
    cyy += (ys[i] - my) * (ys[i] - my);
    cxy += (xs[i] - mx) * (ys[i] - my);
  }
  cxx /= 4;
  cyy /= 3;
  cxy /= 3;
  CHECK(cxx == Approx(3.7));
  const auto& ev = pca.explained_variance;
  CHECK(ev[0] + ev[1] == Approx(cxx + cyy).epsilon(1e-12));
  CHECK(ev[0] * ev[1] == Approx(cxx * cyy - cxy * cxy).epsilon(1e-10));
  CHECK(ev[1] == Approx(1.00638809).epsilon(1e-8));
  CHECK(pca.complete_rows == 4);
  // Epsilon: percentile of the four complete rows' errors only.
  auto errors = reprojection_errors(pca, kp);
  REQUIRE(errors.size() == 4);
  std::sort(errors.begin(), errors.end());
  // The 99th percentile of 4 values: position 2.97, numpy's lerp from the top.
  CHECK(pca.epsilon == Approx(errors[3] - (errors[3] - errors[2]) * 0.03).epsilon(1e-12));
}

TEST_CASE("keypoint PCA: epsilon percentile, multiplier and fixed epsilon", "[train]") {
  std::vector<double> basis;
  auto kp = low_rank_labels(41, 3, 2, 1.0, 4, basis);
  for (int n : {3, 17}) kp[n * 6 + 4] = kNaN;  // two frames without keypoint 2's x
  KeypointPcaSettings s;
  s.components_to_keep = 2;
  s.empirical_epsilon_percentile = 37.5;
  const auto pca = fit_keypoint_pca(kp, 3, s);
  CHECK(pca.complete_rows == 39);
  auto errors = reprojection_errors(pca, kp);
  REQUIRE(errors.size() == 39 * 3);
  std::sort(errors.begin(), errors.end());
  // numpy 'linear': position 0.375 * 116 = 43.5
  CHECK(pca.empirical_epsilon == Approx(0.5 * (errors[43] + errors[44])).epsilon(1e-12));
  s.empirical_epsilon_percentile = 100;
  CHECK(fit_keypoint_pca(kp, 3, s).epsilon == Approx(errors.back()).epsilon(1e-12));
  s.empirical_epsilon_percentile = 0;
  s.empirical_epsilon_multiplier = 2;
  CHECK(fit_keypoint_pca(kp, 3, s).epsilon == Approx(2 * errors.front()).epsilon(1e-12));
  s.epsilon = 7.25;
  const auto fixed = fit_keypoint_pca(kp, 3, s);
  CHECK(fixed.epsilon == 7.25);
  CHECK(fixed.empirical_epsilon == Approx(errors.front()).epsilon(1e-12));
  s.epsilon.reset();
  s.empirical_epsilon_percentile = 101;
  require_user_error([&] { fit_keypoint_pca(kp, 3, s); }, "outside [0, 100]");
}

TEST_CASE("keypoint PCA: multiview rows, two views, three components", "[train]") {
  // Three body parts seen by two affine cameras (keypoints 0-2 in view 0, 4-6 in
  // view 1; keypoint 3 unused): each row (x0, y0, x1, y1) lies in a 3-D subspace.
  std::mt19937 rng(5);
  std::normal_distribution<double> g;
  const int N = 50, K = 7;
  double cam[2][2][4];
  for (auto& c : cam)
    for (auto& row : c)
      for (double& v : row) v = g(rng) * 2;
  std::vector<float> kp(std::size_t(N) * K * 2, 0.f);
  for (int n = 0; n < N; ++n)
    for (int i = 0; i < 3; ++i) {
      const double p[3] = {30 * g(rng), 30 * g(rng), 30 * g(rng)};
      for (int v = 0; v < 2; ++v)
        for (int c = 0; c < 2; ++c) {
          double x = 200 + cam[v][c][3] + 0.01 * g(rng);
          for (int a = 0; a < 3; ++a) x += cam[v][c][a] * p[a];
          kp[(std::size_t(n) * K + (v == 0 ? i : 4 + i)) * 2 + c] = float(x);
        }
      kp[(std::size_t(n) * K + 3) * 2] = float(g(rng));
    }
  KeypointPcaSettings s;
  s.mode = PcaMode::multiview;
  s.mirrored_column_matches = {{0, 1, 2}, {4, 5, 6}};
  s.components_to_keep = 0.99;
  const auto pca = fit_keypoint_pca(kp, K, s);
  CHECK(pca.dims == 4);
  CHECK(pca.rows_per_frame == 3);
  CHECK(pca.rows == 150);
  CHECK(pca.complete_rows == 150);
  CHECK(pca.gather == std::vector<int>{0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13});
  CHECK(pca.components_kept == 3);
  CHECK(pca.explained_variance_ratio[3] < 1e-6);
  REQUIRE(pca.warnings.size() == 1);
  CHECK(pca.warnings[0].find("keep 3 components") != std::string::npos);
  CHECK(pca.epsilon < 0.1);
  s.components_to_keep = 3;
  CHECK(fit_keypoint_pca(kp, K, s).warnings.empty());
  // One missing label makes one NaN row. (Its pairwise-deleted covariance is no
  // longer exactly rank 3, so the errors grow: numpy's behaviour too.)
  auto holes = kp;
  holes[(std::size_t(7) * K + 5) * 2 + 1] = kNaN;
  const auto with_hole = fit_keypoint_pca(holes, K, s);
  CHECK(with_hole.complete_rows == 149);
  CHECK(std::isfinite(with_hole.epsilon));
  // Mean of column 2 (view 1 x) is the nanmean over all rows of keypoints 4-6.
  double m = 0;
  for (int n = 0; n < N; ++n)
    for (int i = 4; i < 7; ++i) m += kp[(std::size_t(n) * K + i) * 2];
  CHECK(pca.mean[2] == Approx(m / 150).epsilon(1e-12));

  s.mirrored_column_matches = {{0, 1, 2}};
  require_user_error([&] { fit_keypoint_pca(kp, K, s); }, "at least two views");
  s.mirrored_column_matches = {{0, 1, 2}, {4, 5}};
  require_user_error([&] { fit_keypoint_pca(kp, K, s); }, "view 1 lists 2");
  s.mirrored_column_matches = {{0, 1, 2}, {4, 5, 7}};
  require_user_error([&] { fit_keypoint_pca(kp, K, s); }, "keypoint index 7");
}

TEST_CASE("keypoint PCA: too few rows, unlabelled keypoints, no variance", "[train]") {
  std::vector<double> basis;
  const auto kp = low_rank_labels(7, 4, 2, 0.1, 6, basis);
  KeypointPcaSettings s;
  require_user_error([&] { fit_keypoint_pca(kp, 4, s); }, "7 samples < 8 observation dimensions",
                     "label more frames");
  s.columns_for_singleview_pca = std::vector<int>{0, 1, 2};
  CHECK(fit_keypoint_pca(kp, 4, s).dims == 6);
  auto holes = kp;
  for (int n = 0; n < 7; ++n) holes[n * 8 + 2] = kNaN;  // keypoint 1 never labelled
  require_user_error([&] { fit_keypoint_pca(holes, 4, s); }, "fewer than 2");
  const std::vector<float> still(20, 3.f);
  s.columns_for_singleview_pca.reset();
  require_user_error([&] { fit_keypoint_pca(still, 1, s); }, "do not vary");
}

TEST_CASE("keypoint PCA: make_pca_loss_tables feeds Backend::pca_loss the fitted layout", "[train]") {
  // The loss on the training frames themselves (scaled into network pixels) is the
  // mean of relu(error - epsilon) over the fit's own per-pair errors.
  std::vector<double> basis;
  const int N = 30, K = 5;
  const auto kp = low_rank_labels(N, K, 2, 1.0, 7, basis);
  auto backend = trainer::compute::make_cpu_backend(1);
  auto& stream = backend->default_stream();
  for (PcaMode mode : {PcaMode::singleview, PcaMode::multiview}) {
    KeypointPcaSettings s;
    s.mode = mode;
    if (mode == PcaMode::singleview) {
      s.columns_for_singleview_pca = std::vector<int>{4, 0, 2, 1};
      s.components_to_keep = 3;
    } else {
      s.mirrored_column_matches = {{0, 1}, {3, 4}};
      s.components_to_keep = 3;
    }
    s.empirical_epsilon_percentile = 50;
    const auto pca = fit_keypoint_pca(kp, K, s);
    const auto tables = make_pca_loss_tables(*backend, pca, stream);
    CHECK(tables.tables().rows_per_frame == pca.rows_per_frame);
    CHECK(tables.tables().num_components == pca.components_kept);
    const float sx = 2.f, sy = 0.5f;
    std::vector<float> net(kp.size());
    for (std::size_t i = 0; i < kp.size(); ++i) net[i] = kp[i] / ((i & 1) ? sy : sx);
    float loss = 0;
    backend->pca_loss(net.data(), N, K, tables.tables(), sx, sy, &loss, nullptr, 1.f, stream);
    double expected = 0;
    const auto errors = reprojection_errors(pca, kp);
    for (double e : errors) expected += std::max(e - pca.epsilon, 0.0);
    expected /= double(errors.size());
    INFO((mode == PcaMode::singleview ? "singleview" : "multiview"));
    CHECK(loss == Approx(expected).epsilon(1e-5));
    CHECK(loss > 0.f);
  }
}
