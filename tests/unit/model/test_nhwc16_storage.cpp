// The backbone in 16-bit NHWC activation storage (Backend::activation_storage)
// against the same network with fp32 activations (both with 16-bit convolutions)
// and against fp32 throughout, on the CPU backend: the storage changes only
// roundings; a layer that misread the layout would be off by the size of the
// values themselves. (The ops themselves: tests/unit/compute/test_cpu_storage16.cpp.)
#include <catch2/catch.hpp>

#include <cmath>

#include "../compute/test_util.hpp"  // rel_error
#include "compute/losses/heatmap_mse.hpp"  // heatmap_mse_loss
#include "model_test_util.hpp"

using namespace trainer;

namespace {
struct Outcome {
  std::vector<float> heatmaps, grads, buffers;
};

// L2 norm of a - b over the L2 norm of b.
double l2_error(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / (den > 0 ? den : 1e-300));
}

Outcome run(compute::Precision precision, bool storage16, const std::string& backbone) {
  auto b = compute::make_cpu_backend(2, precision);
  if (storage16) b->set_activation_storage(compute::storage_16bit_of(precision));
  auto& s = b->default_stream();
  model::HeatmapModel m(*b, model::ModelSpec{backbone, 3, 2});
  m.initialize(21, s);
  const compute::Shape4 in{2, 3, 64, 64};
  const auto images = model_test::random_vector(in.numel(), 8);
  compute::DeviceBuffer x(*b, in.numel());
  b->upload(x.data(), images.data(), images.size(), s);
  model::Context ctx{*b, s, true, nullptr, nullptr};
  auto y = m.forward(ctx, {x.data(), in});
  REQUIRE(y.storage == compute::Storage::f32_nchw);  // the head always sees fp32
  const auto kp = model_test::random_keypoints(2, 3, 16, 9);
  compute::DeviceBuffer keypoints(*b, kp.size()), targets(*b, y.shape.numel()),
      mask(*b, std::size_t(y.shape.n) * y.shape.c), loss(*b, 1), dpred(*b, y.shape.numel());
  b->upload(keypoints.data(), kp.data(), kp.size(), s);
  b->heatmap_targets(keypoints.data(), {targets.data(), y.shape}, 1.25f, mask.data(), s);
  b->heatmap_loss(y, {targets.data(), y.shape}, mask.data(), compute::heatmap_mse_loss(), loss.data(), dpred.data(),
                  1.f, s);
  // A random gradient of O(1) at the heatmaps rather than the loss's (about 1e-8 at
  // initialization, which fp16 without loss scaling would flush to zero).
  const auto g = model_test::random_vector(y.shape.numel(), 10);
  b->upload(dpred.data(), g.data(), g.size(), s);
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

TEST_CASE("16-bit NHWC activations add no more error than the 16-bit convolutions themselves",
          "[model][storage16]") {
  for (const char* backbone : {"resnet18", "resnet50"}) {
    const Outcome exact = run(compute::Precision::fp32, false, backbone);
    for (compute::Precision p : {compute::Precision::bf16, compute::Precision::fp16}) {
      INFO(compute::precision_name(p) << " " << backbone);
      const Outcome stored = run(p, true, backbone), convs = run(p, false, backbone);
      REQUIRE(stored.grads.size() == exact.grads.size());
      // Forward: the storage rounds the residual stream and the batch norms' outputs,
      // which the next convolution rounds anyway: within 16-bit precision.
      const double heat = l2_error(stored.heatmaps, convs.heatmaps);
      INFO("heatmaps: 16-bit vs fp32 activations " << heat);
      CHECK(heat < (p == compute::Precision::bf16 ? 1e-3 : 1e-4));
      // Backward: at initialization a ResNet's gradients are ill-conditioned (one
      // fp32 ulp moves them by about 1e-3, so bf16 rounding moves them by O(1)):
      // compare both 16-bit paths with fp32 and require the storage to cost no
      // more than the 16-bit convolutions do. A layout or indexing mistake gives
      // errors far above that (or NaN).
      const double grads_stored = l2_error(stored.grads, exact.grads), grads_convs = l2_error(convs.grads, exact.grads);
      const double stats_stored = l2_error(stored.buffers, exact.buffers),
                   stats_convs = l2_error(convs.buffers, exact.buffers);
      INFO("gradients vs fp32: 16-bit activations " << grads_stored << ", fp32 activations " << grads_convs);
      INFO("running statistics vs fp32: 16-bit activations " << stats_stored << ", fp32 activations " << stats_convs);
      CHECK(grads_stored <= 1.25 * grads_convs + 0.02);
      CHECK(stats_stored <= 1.25 * stats_convs + 0.002);
      CHECK(grads_stored > 0.0);
      std::size_t nonzero = 0;
      for (float g : stored.grads) nonzero += g != 0.f;
      CHECK(nonzero > stored.grads.size() / 2);
    }
  }
}
