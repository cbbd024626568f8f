// The batch stager: keypoints land on the device in heatmap pixels, replicated
// per branch, padded rows dropped for evaluation, and the host count of loss
// keypoints agrees with the device mask that heatmap_targets builds.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "compute/backend.hpp"
#include "data/batch.hpp"
#include "train/batch_stager.hpp"

using namespace trainer;

namespace {
struct Fixture {
  std::unique_ptr<compute::Backend> backend = compute::make_cpu_backend(1);
  compute::Stream& stream = backend->default_stream();
  std::vector<float> images;
  data::Batch batch;
  Fixture() {
    batch.size = 2;
    batch.height = batch.width = 64;
    batch.num_keypoints = 3;
    images.assign(batch.image_floats(), 0.5f);
    batch.images = images.data();
    // row 0: inside, NaN, far outside; row 1: inside, just inside the -1 border, inside
    batch.keypoints = {10.f, 20.f, NAN, 5.f, 70.f, 3.f, 0.f, 0.f, -3.9f, 8.f, 63.f, 63.f};
    batch.is_real = {1, 0};
  }
  std::vector<float> device(const float* p, std::size_t n) {
    std::vector<float> v(n);
    backend->download(v.data(), p, n, stream);
    stream.synchronize();
    return v;
  }
};
}  // namespace

TEST_CASE("staged keypoints are in heatmap pixels and counted by lightning-pose's rule", "[train][stager]") {
  Fixture f;
  train::BatchStager stager(*f.backend);
  train::StageLayout layout;
  layout.heatmap_height = layout.heatmap_width = 16;  // a quarter of 64
  const train::StagedBatch& s = stager.stage(f.batch, layout, f.stream);
  CHECK(s.image_shape == compute::Shape4{2, 3, 64, 64});
  CHECK(s.heatmap_shape == compute::Shape4{2, 3, 16, 16});
  const auto kp = f.device(s.keypoints, 12);
  CHECK(kp[0] == Approx(2.5f));
  CHECK(kp[1] == Approx(5.f));
  CHECK(std::isnan(kp[2]));
  CHECK(kp[8] == Approx(-0.975f));  // -3.9 / 4 is inside [-1, w + 1]
  // (10,20) and both row-1 border cases count; NaN and x = 70/4 = 17.5 > 17 do not.
  CHECK(s.counted == 4);

  // The device mask from the same keypoints agrees with the host count.
  compute::DeviceBuffer targets(*f.backend, s.heatmap_shape.numel()), mask(*f.backend, 6);
  f.backend->heatmap_targets(s.keypoints, targets.view(s.heatmap_shape), 1.25f, mask.data(), f.stream);
  double device_count = 0;
  for (float m : f.device(mask.data(), 6)) device_count += m;
  CHECK(device_count == s.counted);
  CHECK(f.device(s.images, 1)[0] == 0.5f);
  stager.release(f.stream);
}

TEST_CASE("staging replicates keypoints per branch and drops padded rows when asked", "[train][stager]") {
  Fixture f;
  train::BatchStager stager(*f.backend);
  train::StageLayout layout;
  layout.heatmap_height = layout.heatmap_width = 16;
  layout.branches = 2;
  layout.drop_padded_rows = true;
  const train::StagedBatch& s = stager.stage(f.batch, layout, f.stream);
  CHECK(s.heatmap_shape == compute::Shape4{4, 3, 16, 16});
  const auto kp = f.device(s.keypoints, 24);
  for (int i = 6; i < 12; ++i) CHECK(std::isnan(kp[std::size_t(i)]));  // row 1 is padding
  for (int i = 0; i < 12; ++i) {
    if (std::isnan(kp[std::size_t(i)])) {
      CHECK(std::isnan(kp[std::size_t(i + 12)]));
    } else {
      CHECK(kp[std::size_t(i)] == kp[std::size_t(i + 12)]);
    }
  }
  CHECK(s.counted == 2);  // one keypoint of row 0, in each of two branches
  stager.release(f.stream);

  // The next batch uses the other slot; a third reuses the first.
  layout.branches = 1;
  layout.keypoints = false;
  const float* first = s.images;
  const train::StagedBatch& s2 = stager.stage(f.batch, layout, f.stream);
  CHECK(s2.keypoints == nullptr);
  CHECK(s2.images != first);
  stager.release(f.stream);
  const train::StagedBatch& s3 = stager.stage(f.batch, layout, f.stream);
  CHECK(s3.images == first);
  stager.release(f.stream);
}

TEST_CASE("uniform_missing: a label missing from the data gets the uniform target, an out-of-frame one none",
          "[train][stager]") {
  Fixture f;
  // Row 0: keypoint 1 is NaN because the data set has no label; keypoint 2 is NaN
  // because augmentation pushed it out (its label exists).
  f.batch.keypoints = {10.f, 20.f, NAN, NAN, NAN, NAN, 0.f, 0.f, 8.f, 8.f, 63.f, 63.f};
  f.batch.missing = {0, 1, 0, 0, 0, 0};
  f.batch.is_real = {1, 1};
  for (const bool uniform : {false, true}) {
    INFO("uniform_missing " << uniform);
    train::BatchStager stager(*f.backend);
    train::StageLayout layout;
    layout.heatmap_height = layout.heatmap_width = 16;
    layout.uniform_missing = uniform;
    const train::StagedBatch& s = stager.stage(f.batch, layout, f.stream);
    CHECK(s.counted == (uniform ? 5 : 4));
    compute::DeviceBuffer targets(*f.backend, s.heatmap_shape.numel()), mask(*f.backend, 6);
    f.backend->heatmap_targets(s.keypoints, targets.view(s.heatmap_shape), 1.25f, mask.data(), f.stream);
    const auto m = f.device(mask.data(), 6);
    CHECK(m[1] == (uniform ? 1.f : 0.f));
    CHECK(m[2] == 0.f);
    double device_count = 0;
    for (float v : m) device_count += v;
    CHECK(device_count == s.counted);  // the host count agrees with the device mask
    const auto t = f.device(targets.data(), s.heatmap_shape.numel());
    CHECK(t[256 + 17] == (uniform ? 1.f / 256 : 0.f));  // plane (0, 1)
    stager.release(f.stream);
  }
}
