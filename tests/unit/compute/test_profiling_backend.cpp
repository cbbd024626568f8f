// ProfilingBackend: forwards every op unchanged, and while enabled counts and times
// each op under its category (the `bench step --profile` table).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compute/losses/heatmap_mse.hpp"  // heatmap_mse_loss
#include "compute/profiling_backend.hpp"
#include "model/heatmap_model.hpp"  // HeatmapModel

using namespace trainer;
using compute::OpCategory;

namespace {
// Gradients of one forward/backward of a small model built on `b`.
std::vector<float> gradients(compute::Backend& b, const std::string& backbone = "resnet18") {
  auto& s = b.default_stream();
  model::HeatmapModel m(b, model::ModelSpec{backbone, 2, 2});
  m.initialize(3, s);
  const compute::Shape4 in{2, 3, 64, 64};
  std::vector<float> images(in.numel());
  for (std::size_t i = 0; i < images.size(); ++i) images[i] = float((i * 37) % 101) / 50.f - 1.f;
  compute::DeviceBuffer x(b, in.numel());
  b.upload(x.data(), images.data(), images.size(), s);
  model::Context ctx{b, s, true, nullptr, nullptr};
  auto y = m.forward(ctx, {x.data(), in});
  const std::vector<float> kp{3, 4, 10, 12, 7, 7, 14, 2};
  compute::DeviceBuffer k(b, kp.size()), t(b, y.shape.numel()), mask(b, 4), loss(b, 1), d(b, y.shape.numel());
  b.upload(k.data(), kp.data(), kp.size(), s);
  b.heatmap_targets(k.data(), {t.data(), y.shape}, 1.25f, mask.data(), s);
  b.heatmap_loss(y, {t.data(), y.shape}, mask.data(), compute::heatmap_mse_loss(), loss.data(), d.data(), 1.f, s);
  m.backward(ctx, {d.data(), y.shape}, true);
  std::vector<float> g(m.store().parameter_count());
  b.download(g.data(), m.store().grads_data(), g.size(), s);
  s.synchronize();
  return g;
}
}  // namespace

TEST_CASE("profiling backend: the same numbers as the backend it wraps; ops counted and timed by category",
          "[compute][profile]") {
  auto cpu = compute::make_cpu_backend(2);
  compute::ProfilingBackend profiled(*cpu);
  const auto direct = gradients(*cpu);
  CHECK(gradients(profiled) == direct);  // disabled: plain forwarding
  CHECK(profiled.take_profile().calls == compute::OpProfile{}.calls);

  profiled.set_enabled(true);
  CHECK(gradients(profiled) == direct);  // enabled: still the same numbers
  const compute::OpProfile p = profiled.take_profile();
  const auto calls = [&](OpCategory c) { return p.calls[std::size_t(c)]; };
  const auto ms = [&](OpCategory c) { return p.ms[std::size_t(c)]; };
  // ResNet-18: 20 convolutions (17 in the blocks and stem, 3 shortcut) forward, and
  // one conv2d_backward each (both gradients; the stem's without backward-data), plus
  // the head's 2 transposed convolutions x 3.
  CHECK(calls(OpCategory::convolution) == 20 + 20 + 2 * 3);
  CHECK(calls(OpCategory::normalization) > 0);
  CHECK(calls(OpCategory::head_loss) >= 3);  // targets, the loss, the softmax
  CHECK(calls(OpCategory::copies) >= 2);     // the images and keypoints uploads
  CHECK(ms(OpCategory::convolution) > 0);
  // Time is charged only to categories that ran something. (Which category took
  // longer is a timing, and a loaded CI machine can reorder any two.)
  for (std::size_t c = 0; c < p.calls.size(); ++c)
    if (p.calls[c] == 0) CHECK(p.ms[c] == 0);
  CHECK(profiled.take_profile().calls == compute::OpProfile{}.calls);  // taken: forgotten
  CHECK(profiled.fuses_norm_activation() == cpu->fuses_norm_activation());
}

TEST_CASE("profiling backend: a ViT's ops are timed too, as matmul, attention and the rest", "[compute][profile]") {
  auto cpu = compute::make_cpu_backend(2);
  compute::ProfilingBackend profiled(*cpu);
  const auto direct = gradients(*cpu, "vits_dino");
  profiled.set_enabled(true);
  CHECK(gradients(profiled, "vits_dino") == direct);
  const compute::OpProfile p = profiled.take_profile();
  const auto calls = [&](OpCategory c) { return p.calls[std::size_t(c)]; };
  // ViT-S: 12 layers, each one attention forward and backward, and its Linear layers
  // forward and backward: query, key and value as one linears_* call, then the
  // output projection, fc1 and fc2; two LayerNorms each way per layer.
  CHECK(calls(OpCategory::attention) == 12 * 2);
  CHECK(calls(OpCategory::matmul) >= 12 * 4 * 2);
  CHECK(calls(OpCategory::normalization) >= 12 * 2 * 2);
  CHECK(calls(OpCategory::elementwise) > 0);
  CHECK(p.ms[std::size_t(OpCategory::matmul)] > 0);
}

TEST_CASE("profiling backend: a bf16 ViT's Linear layers read 16-bit activation copies; the same bits without them",
          "[compute][profile][vit][autocast]") {
  auto cpu = compute::make_cpu_backend(2, compute::Precision::bf16);
  compute::ProfilingBackend profiled(*cpu);
  REQUIRE(profiled.transformer_ops().activation_copies());  // the wrapper answers for the ops it forwards to
  profiled.set_enabled(true);
  const auto with_copies = gradients(profiled, "vits_dino");
  // Per layer and pass: the query/key/value layers read LayerNorm 1's copy, fc1
  // LayerNorm 2's, fc2 GELU's. The output projection reads a fused attention's own
  // 16-bit output, which the CPU's attention (not fused) does not keep.
  CHECK(profiled.take_profile().copy_reads == 12 * 3 * 2);

  // TRAINER_VIT_16BIT_COPIES=0: every product rounds its fp32 operands, to the same bits.
  cpu->transformer_ops().set_activation_copies(false);
  CHECK_FALSE(profiled.transformer_ops().activation_copies());
  CHECK(gradients(profiled, "vits_dino") == with_copies);
  CHECK(profiled.take_profile().copy_reads == 0);

  // fp32 keeps no copies.
  auto fp32 = compute::make_cpu_backend(2);
  CHECK_FALSE(fp32->transformer_ops().activation_copies());
}
