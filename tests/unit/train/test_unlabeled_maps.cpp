// The semi-supervised step's keypoint and gradient maps (train/unlabeled_maps.hpp),
// against the sequence the step ran before they existed (2026-11-27): the unwarp
// applied first, the unsupervised losses given the frame scales, the importance in
// their gradient scale and the unwarp's transpose after. The same losses computed
// both ways on the CPU backend must agree, values and keypoint gradients.
#include <catch2/catch.hpp>

#include <algorithm>  // std::copy, std::max
#include <cmath>      // std::fabs
#include <vector>     // std::vector

#include "../compute/test_util.hpp"  // random_vector, rel_error
#include "compute/backend.hpp"       // make_cpu_backend
#include "train/unlabeled_maps.hpp"

using namespace trainer;
using compute::test::random_vector;
using compute::test::rel_error;

TEST_CASE("unlabeled maps: the frame scale after the unwarp, the gradient through its transpose", "[train][semi]") {
  const std::vector<float> unwarp{0.9f, -0.2f, 5.f, 0.3f, 1.1f, -7.f};
  const float sx = 1.5f, sy = 0.75f;
  const double factor = 0.35;
  const train::UnlabeledMaps m = train::unlabeled_maps(unwarp, sx, sy, factor);
  // A point: S (U p); a gradient g with respect to the mapped point: factor (S U)^T g.
  const double px = 3.f, py = -4.f, gx = 0.25, gy = -2.0;
  const double ux = 0.9 * px - 0.2 * py + 5.0, uy = 0.3 * px + 1.1 * py - 7.0;
  CHECK(m.to_frame.m[0] * px + m.to_frame.m[1] * py + m.to_frame.m[2] == Approx(sx * ux));
  CHECK(m.to_frame.m[3] * px + m.to_frame.m[4] * py + m.to_frame.m[5] == Approx(sy * uy));
  CHECK(m.back.m[0] * gx + m.back.m[1] * gy + m.back.m[2] == Approx(factor * (0.9 * sx * gx + 0.3 * sy * gy)));
  CHECK(m.back.m[3] * gx + m.back.m[4] * gy + m.back.m[5] == Approx(factor * (-0.2 * sx * gx + 1.1 * sy * gy)));
  // Not augmented: the frame scale alone.
  const train::UnlabeledMaps plain = train::unlabeled_maps({}, sx, sy, factor);
  CHECK(std::vector<float>(plain.to_frame.m, plain.to_frame.m + 6) == std::vector<float>{sx, 0, 0, 0, sy, 0});
  CHECK(std::vector<float>(plain.back.m, plain.back.m + 6) ==
        std::vector<float>{float(sx * factor), 0, 0, 0, float(sy * factor), 0});
}

TEST_CASE("unlabeled maps give the unsupervised losses and gradients of the unwarp-then-scaled-losses sequence",
          "[train][semi]") {
  auto be = compute::make_cpu_backend(1);
  compute::Stream& s = be->default_stream();
  const int frames = 6, K = 4, points = frames * K;
  const auto kp = random_vector(std::size_t(points) * 2, 31, 10.f, 120.f);
  const std::vector<float> unwarp{1.05f, 0.12f, -3.f, -0.08f, 0.93f, 4.5f};
  const float sx = 3.2f, sy = 2.6f;
  const double factor = 0.7;  // importance x loss scale
  const float weight = 0.5f;  // the term's weight (temporal_log_weight 0)
  const std::vector<float> epsilon(K, 1.5f);

  // Before: U p, then the loss in frame pixels via its scales, factor in its gradient
  // scale, and U^T on the keypoints' gradient.
  std::vector<float> old_kp = kp, old_grad(kp.size(), 0.f);
  float old_loss = 0;
  compute::AffineMap2D u;
  std::copy(unwarp.begin(), unwarp.end(), u.m);
  be->affine_points(old_kp.data(), points, u.m, s);
  be->temporal_loss(old_kp.data(), nullptr, frames, K, epsilon.data(), 0.f, sx, sy, &old_loss, old_grad.data(),
                    float(factor) * weight, s);
  const compute::AffineMap2D ut = u.transposed_linear();
  be->affine_points(old_grad.data(), points, ut.m, s);

  // Now: one map to the frame, unit scales, the factor in the map back.
  const train::UnlabeledMaps m = train::unlabeled_maps(unwarp, sx, sy, factor);
  std::vector<float> new_kp = kp, new_grad(kp.size(), 0.f);
  float new_loss = 0;
  be->affine_points(new_kp.data(), points, m.to_frame.m, s);
  be->temporal_loss(new_kp.data(), nullptr, frames, K, epsilon.data(), 0.f, 1.f, 1.f, &new_loss, new_grad.data(),
                    weight, s);
  be->affine_points(new_grad.data(), points, m.back.m, s);

  CHECK(old_loss > 0);
  CHECK(std::fabs(new_loss - old_loss) <= 1e-5 * old_loss);
  double largest = 0;
  for (float g : old_grad) largest = std::max(largest, double(std::fabs(g)));
  CHECK(largest > 0);
  CHECK(rel_error(new_grad, old_grad) < 1e-5);
}
