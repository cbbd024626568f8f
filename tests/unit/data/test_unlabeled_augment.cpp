// lightning-pose's augmentation of unlabelled frames (data/unlabeled_augment.hpp):
// the draws' ranges, the map back for predicted keypoints, and the photometric steps.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "data/unlabeled_augment.hpp"

using namespace trainer::data;

namespace {
void map_point(const double* m, double x, double y, double& ox, double& oy) {
  ox = m[0] * x + m[1] * y + m[2];
  oy = m[3] * x + m[4] * y + m[5];
}
}  // namespace

TEST_CASE("unlabelled augmentation: which imgaug values augment", "[data]") {
  CHECK(augments_unlabeled_frames(Augmentation::kDlc));
  CHECK(augments_unlabeled_frames(Augmentation::kDlcTopDown));
  CHECK_FALSE(augments_unlabeled_frames(Augmentation::kDlcLr));
  CHECK_FALSE(augments_unlabeled_frames(Augmentation::kNone));
}

TEST_CASE("unlabelled augmentation: the unwarp takes augmented points back to the resized frame", "[data]") {
  bool rotated = false;
  for (long step = 0; step < 50; ++step) {
    const UnlabeledAugment a = draw_unlabeled_augment(256, 256, 42, 3, step);
    // Same key, same draw; another step, another draw.
    const UnlabeledAugment again = draw_unlabeled_augment(256, 256, 42, 3, step);
    for (int i = 0; i < 6; ++i) CHECK(again.on_resized.m[i] == a.on_resized.m[i]);
    CHECK(a.gain >= 0.75f * 0.75f);
    CHECK(a.gain <= 1.25f * 1.25f);
    CHECK(a.shot_noise >= 0.0);
    CHECK(a.shot_noise <= 10.0);
    // The rotation (at most 10 degrees) and scale (0.8-1.2 per axis) keep the centre
    // of the network input where it is.
    const double u[6] = {a.unwarp[0], a.unwarp[1], a.unwarp[2], a.unwarp[3], a.unwarp[4], a.unwarp[5]};
    double cx, cy;
    map_point(a.on_resized.m, 128.0, 128.0, cx, cy);
    CHECK(cx == Approx(128.0).margin(1e-9));
    CHECK(cy == Approx(128.0).margin(1e-9));
    rotated |= std::fabs(a.on_resized.m[1]) > 1e-3;
    // S(kx, ky) R: each row of the linear part has its axis's scale as its length.
    for (const double row : {std::hypot(a.on_resized.m[0], a.on_resized.m[1]),
                             std::hypot(a.on_resized.m[3], a.on_resized.m[4])}) {
      CHECK(row >= 0.8 - 1e-12);
      CHECK(row <= 1.2 + 1e-12);
    }
    for (double x : {0.0, 100.0, 255.0})
      for (double y : {0.0, 200.0, 255.0}) {
        double ax, ay, bx, by;
        map_point(a.on_resized.m, x, y, ax, ay);  // where the augmented frame shows resized (x, y)
        map_point(u, ax, ay, bx, by);
        CHECK(bx == Approx(x).margin(1e-3));
        CHECK(by == Approx(y).margin(1e-3));
      }
  }
  CHECK(rotated);
}

TEST_CASE("unlabelled augmentation: brightness/contrast, then shot noise of variance v * factor", "[data]") {
  UnlabeledAugment a;
  a.gain = 1.2f;
  a.offset = -3.f;
  std::vector<float> img(20000, 100.f), quiet = img;
  apply_unlabeled_photometrics(a, quiet.data(), quiet.size(), 1, 0, 0, 0);
  for (auto v : quiet) CHECK(v == Approx(117.f));  // 1.2 * 100 - 3
  std::vector<float> bright(10, 250.f);
  apply_unlabeled_photometrics(a, bright.data(), bright.size(), 1, 0, 0, 0);
  for (auto v : bright) CHECK(v == Approx(297.f));  // floats, as DALI's: not clamped
  a.shot_noise = 4.0;
  apply_unlabeled_photometrics(a, img.data(), img.size(), 1, 0, 0, 0);
  double mean = 0, var = 0;
  for (auto v : img) mean += v;
  mean /= double(img.size());
  for (auto v : img) var += (v - mean) * (v - mean);
  var /= double(img.size());
  CHECK(mean == Approx(117).margin(0.3));
  CHECK(var == Approx(117 * 4.0).epsilon(0.05));
  // Keyed by frame: another frame, other noise; the same frame, the same.
  std::vector<float> x(100, 100.f), y(100, 100.f), z(100, 100.f);
  apply_unlabeled_photometrics(a, x.data(), x.size(), 1, 0, 0, 0);
  apply_unlabeled_photometrics(a, y.data(), y.size(), 1, 0, 0, 0);
  apply_unlabeled_photometrics(a, z.data(), z.size(), 1, 0, 0, 1);
  CHECK(x == y);
  CHECK(x != z);
}
