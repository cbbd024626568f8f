// lightning-pose's visible flags end to end on the CPU backend: the flag (or, without
// the column, uniform_heatmaps_for_nan_keypoints) picks each keypoint's target, the
// batch stager writes it for the target op, and the heatmap targets, the loss mask and
// the host count of loss keypoints follow: 0 none, 1 uniform (with or without x, y),
// 2 the Gaussian, no flag as before the column existed.
#include <catch2/catch.hpp>

#include <algorithm>  // std::max_element
#include <cmath>      // NAN
#include <memory>     // std::unique_ptr
#include <vector>     // std::vector

#include "compute/backend.hpp"
#include "data/batch.hpp"
#include "data/visibility.hpp"
#include "train/batch_stager.hpp"
#include "train/label_target.hpp"

using namespace trainer;
using data::kNotLabeled;
using data::kNoVisibilityFlag;
using data::kOccluded;
using data::kVisible;
using train::LabelTarget;

namespace {
constexpr int kSide = 64, kHeatmap = 16, kPlane = kHeatmap * kHeatmap;

// One row of keypoints, flags and missing marks, staged and turned into targets.
struct Staged {
  std::vector<float> targets;  // [K, 16, 16]
  std::vector<float> mask;     // [K]
  double counted = 0;
};

Staged stage(const std::vector<float>& keypoints, const std::vector<std::uint8_t>& visibility,
             const std::vector<std::uint8_t>& missing, bool uniform_missing) {
  auto backend = compute::make_cpu_backend(1);
  compute::Stream& stream = backend->default_stream();
  data::Batch batch;
  batch.size = 1;
  batch.height = batch.width = kSide;
  batch.num_keypoints = int(missing.size());
  std::vector<float> images(batch.image_floats(), 0.f);
  batch.images = images.data();
  batch.keypoints = keypoints;
  batch.visibility = visibility;
  batch.missing = missing;
  batch.is_real = {1};
  train::BatchStager stager(*backend);
  train::StageLayout layout;
  layout.heatmap_height = layout.heatmap_width = kHeatmap;
  layout.uniform_missing = uniform_missing;
  const train::StagedBatch& s = stager.stage(batch, layout, stream);
  compute::DeviceBuffer targets(*backend, s.heatmap_shape.numel()), mask(*backend, missing.size());
  backend->heatmap_targets(s.keypoints, targets.view(s.heatmap_shape), 1.25f, mask.data(), stream);
  Staged out;
  out.targets.resize(s.heatmap_shape.numel());
  out.mask.resize(missing.size());
  backend->download(out.targets.data(), targets.data(), out.targets.size(), stream);
  backend->download(out.mask.data(), mask.data(), out.mask.size(), stream);
  stream.synchronize();
  out.counted = s.counted;
  stager.release(stream);
  return out;
}

enum class Kind { kZero, kUniform, kGaussian };
// What plane j of the targets is.
Kind kind_of(const Staged& s, int j) {
  const float* p = s.targets.data() + std::size_t(j) * kPlane;
  const float peak = *std::max_element(p, p + kPlane);
  if (peak == 0.f) return Kind::kZero;
  bool flat = true;
  for (int i = 0; i < kPlane; ++i) flat = flat && p[i] == Approx(1.f / kPlane);
  return flat ? Kind::kUniform : Kind::kGaussian;
}
}  // namespace

TEST_CASE("label_target: lightning-pose's rule for each flag", "[train][visibility]") {
  for (const bool missing : {false, true})
    for (const bool uniform : {false, true}) {
      INFO("missing " << missing << ", uniform_missing " << uniform);
      // Explicit flags ignore uniform_heatmaps_for_nan_keypoints and whether x, y exist.
      CHECK(train::label_target(kNotLabeled, missing, uniform) == LabelTarget::kNone);
      CHECK(train::label_target(kOccluded, missing, uniform) == LabelTarget::kUniform);
      CHECK(train::label_target(kVisible, missing, uniform) == LabelTarget::kKeypoint);
    }
  // No flag: lightning-pose's synthesised flags (1 or 0 for a missing keypoint, else 2).
  CHECK(train::label_target(kNoVisibilityFlag, false, false) == LabelTarget::kKeypoint);
  CHECK(train::label_target(kNoVisibilityFlag, false, true) == LabelTarget::kKeypoint);
  CHECK(train::label_target(kNoVisibilityFlag, true, false) == LabelTarget::kNone);
  CHECK(train::label_target(kNoVisibilityFlag, true, true) == LabelTarget::kUniform);
}

TEST_CASE("visible 0 with x, y: no target, out of the loss", "[train][visibility]") {
  for (const bool uniform : {false, true}) {
    const Staged s = stage({20.f, 24.f}, {kNotLabeled}, {0}, uniform);
    CHECK(kind_of(s, 0) == Kind::kZero);
    CHECK(s.mask[0] == 0.f);
    CHECK(s.counted == 0);
  }
}

TEST_CASE("visible 1 with x, y: the uniform target, in the loss", "[train][visibility]") {
  for (const bool uniform : {false, true}) {
    const Staged s = stage({20.f, 24.f}, {kOccluded}, {0}, uniform);
    CHECK(kind_of(s, 0) == Kind::kUniform);
    CHECK(s.mask[0] == 1.f);
    CHECK(s.counted == 1);
  }
}

TEST_CASE("visible 1 without x, y (or pushed out of the frame): the uniform target", "[train][visibility]") {
  for (const bool uniform : {false, true}) {
    // Missing from the file, and labelled but moved out of the frame by augmentation.
    const Staged s = stage({NAN, NAN, NAN, NAN}, {kOccluded, kOccluded}, {1, 0}, uniform);
    CHECK(kind_of(s, 0) == Kind::kUniform);
    CHECK(kind_of(s, 1) == Kind::kUniform);
    CHECK(s.counted == 2);
  }
}

TEST_CASE("visible 2: the Gaussian at the keypoint; none without x, y", "[train][visibility]") {
  for (const bool uniform : {false, true}) {
    const Staged s = stage({20.f, 24.f, NAN, NAN, NAN, NAN}, {kVisible, kVisible, kVisible}, {0, 1, 0}, uniform);
    REQUIRE(kind_of(s, 0) == Kind::kGaussian);
    // Its peak is at (20, 24) / 4 = heatmap pixel (5, 6).
    const float* p = s.targets.data();
    CHECK(std::max_element(p, p + kPlane) - p == 6 * kHeatmap + 5);
    CHECK(s.mask[0] == 1.f);
    // NaN in the file, or pushed out of the frame: none, even with uniform_missing.
    CHECK(kind_of(s, 1) == Kind::kZero);
    CHECK(kind_of(s, 2) == Kind::kZero);
    CHECK(s.counted == 1);
  }
}

TEST_CASE("no visible column: uniform_heatmaps_for_nan_keypoints decides, as before", "[train][visibility]") {
  // Keypoint 0 labelled, 1 missing from the file, 2 labelled but pushed out of the frame.
  const std::vector<float> kp = {20.f, 24.f, NAN, NAN, NAN, NAN};
  for (const bool uniform : {false, true}) {
    INFO("uniform_missing " << uniform);
    // Without the column the batch has no flags, or all kNoVisibilityFlag (a mixed data set).
    for (const auto& flags : {std::vector<std::uint8_t>{}, std::vector<std::uint8_t>(3, kNoVisibilityFlag)}) {
      const Staged s = stage(kp, flags, {0, 1, 0}, uniform);
      CHECK(kind_of(s, 0) == Kind::kGaussian);
      CHECK(kind_of(s, 1) == (uniform ? Kind::kUniform : Kind::kZero));
      CHECK(kind_of(s, 2) == Kind::kZero);
      CHECK(s.counted == (uniform ? 2 : 1));
      double mask_sum = 0;
      for (float m : s.mask) mask_sum += m;
      CHECK(mask_sum == s.counted);  // the host count agrees with the loss mask
    }
  }
}
