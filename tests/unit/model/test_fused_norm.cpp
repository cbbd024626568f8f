// The fused batch-norm + (residual add) + ReLU path gives the same network as the
// separate ops of the path that ran on a GPU on 2026-11-22 (TRAINER_FUSED_NORM=0):
// forward heatmaps, every parameter's gradient and the running statistics, for a
// ResNet with basic blocks and one with bottlenecks, on the CPU backend.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "compute/losses/heatmap_mse.hpp"  // heatmap_mse_loss
#include "../compute/test_util.hpp"  // rel_error
#include "model_test_util.hpp"

using namespace trainer;

namespace {
struct Outcome {
  std::vector<float> heatmaps, grads, buffers;
};

// One training-mode forward and backward of a fresh model (same seed) on fixed inputs.
Outcome run(bool fused, const std::string& backbone) {
  auto b = model_test::cpu();
  b->set_fuses_norm_activation(fused);
  auto& s = b->default_stream();
  model::HeatmapModel m(*b, model::ModelSpec{backbone, 3, 2});
  m.initialize(21, s);
  const compute::Shape4 in{2, 3, 64, 64};
  const auto images = model_test::random_vector(in.numel(), 8);
  compute::DeviceBuffer x(*b, in.numel());
  b->upload(x.data(), images.data(), images.size(), s);
  model::Context ctx{*b, s, true, nullptr, nullptr};
  auto y = m.forward(ctx, {x.data(), in});
  const auto kp = model_test::random_keypoints(2, 3, 16, 9);
  compute::DeviceBuffer keypoints(*b, kp.size()), targets(*b, y.shape.numel()),
      mask(*b, std::size_t(y.shape.n) * y.shape.c), loss(*b, 1), dpred(*b, y.shape.numel());
  b->upload(keypoints.data(), kp.data(), kp.size(), s);
  b->heatmap_targets(keypoints.data(), {targets.data(), y.shape}, 1.25f, mask.data(), s);
  b->heatmap_loss(y, {targets.data(), y.shape}, mask.data(), compute::heatmap_mse_loss(), loss.data(), dpred.data(),
                  1.f, s);
  Outcome out;
  out.heatmaps.resize(y.shape.numel());
  b->download(out.heatmaps.data(), y.data, out.heatmaps.size(), s);
  m.backward(ctx, {dpred.data(), y.shape}, true);
  out.grads.resize(m.store().parameter_count());
  b->download(out.grads.data(), m.store().grads_data(), out.grads.size(), s);
  out.buffers.resize(m.store().buffer_count());
  b->download(out.buffers.data(), m.store().buffers_data(), out.buffers.size(), s);
  s.synchronize();
  return out;
}

}  // namespace

TEST_CASE("fused batch norm + ReLU: the same heatmaps, gradients and running statistics as the separate ops",
          "[model][fused_norm]") {
  for (const char* backbone : {"resnet18", "resnet50"}) {
    INFO(backbone);
    const Outcome fused = run(true, backbone), separate = run(false, backbone);
    REQUIRE(fused.grads.size() == separate.grads.size());
    // The forward is the same arithmetic element by element: bit for bit.
    CHECK(fused.heatmaps == separate.heatmaps);
    CHECK(fused.buffers == separate.buffers);
    // The backward's per-channel float sums may be vectorized in another order.
    CHECK(trainer::compute::test::rel_error(fused.grads, separate.grads) < 1e-6);
    std::size_t nonzero = 0;
    for (float g : fused.grads) nonzero += g != 0.f;
    CHECK(nonzero > fused.grads.size() / 2);  // the comparison covers real gradients
  }
}
