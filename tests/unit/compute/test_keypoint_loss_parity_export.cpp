// Exports inputs and our outputs for the parity check of the unsupervised keypoint
// losses and the PCA fit against lightning-pose's formulas in torch / numpy
// (tests/parity/unsupervised_parity.py, run by tests/integration/parity_unsupervised.sh).
// Hidden from normal runs: `unit_tests "[parity_unsupervised]"` with
// TRAINER_PARITY_DIR set. (Its own tag, not "[parity]": parity_ops.sh runs every
// "[parity]" test into one folder that ops_parity.py reads case by case.)
// Each case is a folder with meta.txt (key = value lines; shape.<name> = dims) and
// one raw little-endian file per tensor: .f32 (float32) or .f64 (float64).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "compute/backend.hpp"
#include "compute/pca_loss_table_buffers.hpp"  // PcaLossTableBuffers
#include "data/label_csv.hpp"                  // parse_label_csv (the mirror-mouse labels)
#include "test_util.hpp"                       // random_vector
#include "train/keypoint_pca.hpp"              // fit_keypoint_pca, make_pca_loss_tables

using namespace trainer::compute;
using namespace trainer::compute::test;
using namespace trainer::train;
namespace fs = std::filesystem;

namespace {

class CaseWriter {
 public:
  CaseWriter(const fs::path& root, const std::string& name) : dir_(root / name) {
    fs::create_directories(dir_);
  }
  ~CaseWriter() { std::ofstream(dir_ / "meta.txt") << meta_.str(); }
  template <class T>
  void tensor(const std::string& name, const std::vector<T>& v, const std::vector<std::size_t>& shape) {
    std::size_t n = 1;
    for (std::size_t s : shape) n *= s;
    REQUIRE(v.size() == n);
    std::ofstream f(dir_ / (name + (sizeof(T) == 4 ? ".f32" : ".f64")), std::ios::binary);
    f.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(T)));
    meta_ << "shape." << name << " =";
    for (std::size_t i = 0; i < shape.size(); ++i) meta_ << (i ? "," : " ") << shape[i];
    meta_ << "\n";
  }
  template <class T>
  void param(const std::string& key, const T& value) {
    meta_ << key << " = " << value << "\n";
  }
  // Settings of the fit, for the reference to format the data itself.
  void settings(const KeypointPcaSettings& s) {
    param("mode", s.mode == PcaMode::singleview ? "singleview" : "multiview");
    if (s.columns_for_singleview_pca) param("columns", join(*s.columns_for_singleview_pca));
    std::string views;
    for (const auto& v : s.mirrored_column_matches) views += (views.empty() ? "" : ";") + join(v);
    if (!views.empty()) param("mirrored_column_matches", views);
    if (const int* c = std::get_if<int>(&s.components_to_keep)) param("components_to_keep_int", *c);
    else param("components_to_keep_float", std::get<double>(s.components_to_keep));
    param("percentile", s.empirical_epsilon_percentile);
    param("multiplier", s.empirical_epsilon_multiplier);
    if (s.epsilon) param("epsilon", *s.epsilon);
    if (s.centering == trainer::compute::PcaCentering::mean) param("centering_method", "mean");
    if (s.centering == trainer::compute::PcaCentering::median) param("centering_method", "median");
  }

 private:
  static std::string join(const std::vector<int>& v) {
    std::string out;
    for (int i : v) out += (out.empty() ? "" : ",") + std::to_string(i);
    return out;
  }
  fs::path dir_;
  std::ostringstream meta_;
};

std::vector<float> to_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

// Labels [N, K, 2] with a rank-`rank` structure plus noise, and some NaN.
std::vector<float> synthetic_labels(int N, int K, int rank, unsigned seed, int holes) {
  auto basis = random_vector(std::size_t(rank) * K * 2, seed, -3.f, 3.f);
  auto latent = random_vector(std::size_t(N) * rank, seed + 1, -10.f, 10.f);
  auto noise = random_vector(std::size_t(N) * K * 2, seed + 2, -0.5f, 0.5f);
  auto offset = random_vector(std::size_t(K) * 2, seed + 3, 50.f, 300.f);
  std::vector<float> kp(std::size_t(N) * K * 2);
  for (int n = 0; n < N; ++n)
    for (int d = 0; d < 2 * K; ++d) {
      double v = offset[d] + noise[std::size_t(n) * K * 2 + d];
      for (int r = 0; r < rank; ++r) v += double(basis[std::size_t(r) * K * 2 + d]) * latent[std::size_t(n) * rank + r];
      kp[std::size_t(n) * K * 2 + d] = float(v);
    }
  for (int h = 0; h < holes; ++h) {
    const std::size_t i = (std::size_t(h) * 7919 + 13) % kp.size();
    kp[i] = std::numeric_limits<float>::quiet_NaN();
  }
  return kp;
}

// A fit case: the labels, the settings, and our fit.
KeypointPca export_fit(const fs::path& root, const std::string& name, const std::vector<float>& kp,
                       int K, const KeypointPcaSettings& s) {
  const KeypointPca pca = fit_keypoint_pca(kp, K, s);
  CaseWriter c(root, name);
  c.param("op", "pca_fit");
  c.settings(s);
  const std::size_t N = kp.size() / (2 * std::size_t(K)), D = std::size_t(pca.dims);
  c.tensor("labels", kp, {N, std::size_t(K), 2});
  c.tensor("mean", pca.mean, {D});
  c.tensor("components", pca.components, {std::size_t(pca.components_kept), D});
  c.tensor("explained_variance_ratio", pca.explained_variance_ratio, {D});
  c.tensor("epsilon", std::vector<double>{pca.epsilon}, {1});
  c.tensor("empirical_epsilon", std::vector<double>{pca.empirical_epsilon}, {1});
  return pca;
}

// A pca_loss case on predictions in network pixels: the fitted tables (as floats),
// the settings (the reference formats the data itself), our loss and gradient.
void export_pca_loss(Backend& be, const fs::path& root, const std::string& name, const KeypointPca& pca,
                     const KeypointPcaSettings& s, int frames, float scale_x, float scale_y,
                     const std::vector<float>& frame_keypoints) {
  Stream& st = be.default_stream();
  const int K = pca.num_keypoints;
  std::vector<float> kp(std::size_t(frames) * K * 2);
  for (std::size_t i = 0; i < kp.size(); ++i) kp[i] = frame_keypoints[i] / ((i & 1) ? scale_y : scale_x);
  const auto tables = make_pca_loss_tables(be, pca, st);
  std::vector<float> d(kp.size(), 0.f);
  float loss = 0;
  be.pca_loss(kp.data(), frames, K, tables.tables(), scale_x, scale_y, &loss, d.data(), 1.f, st);
  CaseWriter c(root, name);
  c.param("op", "pca_loss");
  c.settings(s);
  c.param("scale_x", scale_x);
  c.param("scale_y", scale_y);
  const std::size_t D = std::size_t(pca.dims);
  c.tensor("keypoints", kp, {std::size_t(frames), std::size_t(K), 2});
  c.tensor("mean", to_float(pca.mean), {D});
  c.tensor("components", to_float(pca.components), {std::size_t(pca.components_kept), D});
  c.tensor("epsilon", std::vector<float>{float(pca.epsilon)}, {1});
  c.tensor("loss", std::vector<float>{loss}, {1});
  c.tensor("dkeypoints", d, {std::size_t(frames), std::size_t(K), 2});
}

// A PCA error metric case (the _pca_*_error.csv files after training): the fit's
// tables, predictions in frame pixels, and our per-keypoint reprojection error.
void export_pca_error(const fs::path& root, const std::string& name, const KeypointPca& pca,
                      const KeypointPcaSettings& s, const std::vector<float>& predictions) {
  const std::size_t K = std::size_t(pca.num_keypoints), D = std::size_t(pca.dims);
  const std::size_t frames = predictions.size() / (2 * K);
  CaseWriter c(root, name);
  c.param("op", "pca_error");
  c.settings(s);
  c.tensor("keypoints", predictions, {frames, K, 2});
  c.tensor("mean", pca.mean, {D});
  c.tensor("components", pca.components, {std::size_t(pca.components_kept), D});
  c.tensor("error", pca_reprojection_error(pca, predictions), {frames, K});
}

void export_temporal(Backend& be, const fs::path& root, const std::string& name, int S, int K,
                     bool confidence, float threshold, float sx, float sy, unsigned seed) {
  Stream& st = be.default_stream();
  auto kp = random_vector(std::size_t(S) * K * 2, seed, 0.f, 40.f);
  auto conf = random_vector(std::size_t(S) * K, seed + 1, 0.f, 0.5f);
  auto eps = random_vector(std::size_t(K), seed + 2, 0.f, 20.f);
  std::vector<float> d(kp.size(), 0.f);
  float loss = 0;
  be.temporal_loss(kp.data(), confidence ? conf.data() : nullptr, S, K, eps.data(), threshold, sx, sy,
                   &loss, d.data(), 1.f, st);
  CaseWriter c(root, name);
  c.param("op", "temporal_loss");
  c.param("prob_threshold", threshold);
  c.param("scale_x", sx);
  c.param("scale_y", sy);
  c.tensor("keypoints", kp, {std::size_t(S), std::size_t(K), 2});
  if (confidence) c.tensor("confidence", conf, {std::size_t(S), std::size_t(K)});
  c.tensor("epsilon", eps, {std::size_t(K)});
  c.tensor("loss", std::vector<float>{loss}, {1});
  c.tensor("dkeypoints", d, {std::size_t(S), std::size_t(K), 2});
}

// Labels with NaN replaced and noise added: plausible predictions in frame pixels.
std::vector<float> predictions_from(const std::vector<float>& labels, int K, int frames, unsigned seed) {
  auto noise = random_vector(std::size_t(frames) * K * 2, seed, -4.f, 4.f);
  std::vector<float> out(noise.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const float v = labels[i % labels.size()];
    out[i] = (std::isnan(v) ? 100.f : v) + noise[i];
  }
  return out;
}

}  // namespace

TEST_CASE("export unsupervised loss and PCA fit cases for the parity check", "[.parity_unsupervised]") {
  const char* dir = std::getenv("TRAINER_PARITY_DIR");
  if (!dir) FAIL("set TRAINER_PARITY_DIR to the folder to write the cases to");
  const fs::path root(dir);
  auto be = make_cpu_backend(2);

  export_temporal(*be, root, "temporal_confidence", 16, 17, true, 0.2f, 1.6f, 1.25f, 1);
  export_temporal(*be, root, "temporal_plain", 5, 3, false, 0.f, 1.f, 1.f, 10);
  export_temporal(*be, root, "temporal_long", 64, 9, true, 0.05f, 0.5f, 2.f, 20);

  {  // synthetic singleview: a subset of columns, NaN labels, a fraction of variance
    const int K = 6;
    const auto labels = synthetic_labels(80, K, 3, 100, 9);
    KeypointPcaSettings s;
    s.columns_for_singleview_pca = std::vector<int>{0, 2, 3, 5, 1};
    s.components_to_keep = 0.9;
    const auto pca = export_fit(root, "fit_singleview_fraction", labels, K, s);
    export_pca_loss(*be, root, "pca_loss_singleview", pca, s, 8, 1.5f, 0.8f, predictions_from(labels, K, 8, 101));
    export_pca_error(root, "pca_error_singleview", pca, s, predictions_from(labels, K, 12, 111));
    s.columns_for_singleview_pca.reset();
    s.components_to_keep = 4;
    s.empirical_epsilon_percentile = 90;
    s.empirical_epsilon_multiplier = 1.5;
    export_fit(root, "fit_singleview_count", labels, K, s);
    s.epsilon = 3.5;
    const auto fixed = export_fit(root, "fit_singleview_fixed_epsilon", labels, K, s);
    export_pca_loss(*be, root, "pca_loss_singleview_all", fixed, s, 5, 1.f, 1.f, predictions_from(labels, K, 5, 102));
    // centering_method: the mean, and the median of an even (6) and an odd (5)
    // number of keypoints; NaN labels make their frame's centre NaN, as in torch.
    s.epsilon.reset();
    s.components_to_keep = 0.95;
    s.centering = trainer::compute::PcaCentering::mean;
    const auto mean_centred = export_fit(root, "fit_singleview_mean_centred", labels, K, s);
    export_pca_loss(*be, root, "pca_loss_singleview_mean_centred", mean_centred, s, 8, 1.5f, 0.8f,
                    predictions_from(labels, K, 8, 103));
    s.centering = trainer::compute::PcaCentering::median;
    const auto median_even = export_fit(root, "fit_singleview_median_even", labels, K, s);
    export_pca_loss(*be, root, "pca_loss_singleview_median_even", median_even, s, 8, 1.5f, 0.8f,
                    predictions_from(labels, K, 8, 104));
    export_pca_error(root, "pca_error_singleview_median", median_even, s, predictions_from(labels, K, 7, 114));
    s.columns_for_singleview_pca = std::vector<int>{0, 2, 3, 5, 1};
    const auto median_odd = export_fit(root, "fit_singleview_median_odd", labels, K, s);
    export_pca_loss(*be, root, "pca_loss_singleview_median_odd", median_odd, s, 8, 1.f, 1.f,
                    predictions_from(labels, K, 8, 105));
  }
  {  // synthetic multiview: two views of three body parts, keypoint 3 unused
    const int K = 7;
    const auto labels = synthetic_labels(60, K, 5, 200, 6);
    KeypointPcaSettings s;
    s.mode = PcaMode::multiview;
    s.mirrored_column_matches = {{0, 1, 2}, {4, 5, 6}};
    s.components_to_keep = 3;
    const auto pca = export_fit(root, "fit_multiview", labels, K, s);
    export_pca_loss(*be, root, "pca_loss_multiview", pca, s, 6, 1.25f, 1.25f, predictions_from(labels, K, 6, 201));
    export_pca_error(root, "pca_error_multiview", pca, s, predictions_from(labels, K, 9, 211));
  }

  const char* mm = std::getenv("MIRROR_MOUSE_DIR");
  const fs::path csv = (mm ? fs::path(mm) : fs::path(TRAINER_SOURCE_DIR) / ".." / "shared" / "data" /
                                                 "mirror-mouse-example") / "CollectedData.csv";
  if (!fs::exists(csv)) {
    std::cout << "SKIP: mirror-mouse fit cases: " << csv.string() << " not found (set MIRROR_MOUSE_DIR)\n";
    return;
  }
  // lightning-pose's config_mirror-mouse-example.yaml: 17 keypoints, two mirrored
  // views of 7 body parts, singleview PCA on those 14 keypoints.
  const auto table = trainer::data::parse_label_csv(csv.string());
  const int K = int(table.num_keypoints());
  REQUIRE(K == 17);
  KeypointPcaSettings s;
  s.columns_for_singleview_pca = std::vector<int>{0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14};
  s.components_to_keep = 0.99;
  const auto single = export_fit(root, "fit_mirror_mouse_singleview", table.keypoints, K, s);
  export_pca_loss(*be, root, "pca_loss_mirror_mouse_singleview", single, s, 16, 2.f, 1.5f,
                  predictions_from(table.keypoints, K, 16, 301));
  export_pca_error(root, "pca_error_mirror_mouse_singleview", single, s, predictions_from(table.keypoints, K, 24, 311));
  s.centering = trainer::compute::PcaCentering::median;
  const auto single_median = export_fit(root, "fit_mirror_mouse_singleview_median", table.keypoints, K, s);
  export_pca_loss(*be, root, "pca_loss_mirror_mouse_singleview_median", single_median, s, 16, 2.f, 1.5f,
                  predictions_from(table.keypoints, K, 16, 303));
  KeypointPcaSettings m;
  m.mode = PcaMode::multiview;
  m.mirrored_column_matches = {{0, 1, 2, 3, 4, 5, 6}, {8, 9, 10, 11, 12, 13, 14}};
  m.components_to_keep = 3;
  const auto multi = export_fit(root, "fit_mirror_mouse_multiview", table.keypoints, K, m);
  export_pca_loss(*be, root, "pca_loss_mirror_mouse_multiview", multi, m, 16, 2.f, 1.5f,
                  predictions_from(table.keypoints, K, 16, 302));
  export_pca_error(root, "pca_error_mirror_mouse_multiview", multi, m, predictions_from(table.keypoints, K, 24, 312));
}
