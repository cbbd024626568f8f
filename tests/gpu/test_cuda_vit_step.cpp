// The ViT backbones (vits_dino, vits_dinov2, vits_dinov3, vitb_sam, and SAM2's Hiera as
// vitt_sam2) on the GPU against the CPU
// backend: the same weights and images give the same heatmaps and the same gradient for
// every tensor (fp32, TF32 off), at 128x128 (8x8 patches, the position grid resized
// down; vitb_sam's windowed layers: one zero-padded 14x14 window per image; vitt_sam2:
// 16 windows of 8, pooled queries, a padded 14-window and 7-window; vitb_sam2: the same
// with 2 heads of 56 in stage 0 and a 14x14 position table).
#include <catch2/catch.hpp>

#include <string>  // std::string
#include <vector>  // std::vector

#include "../shared/model_step.hpp"  // test_shared::ModelStep
#include "gpu_test_util.hpp"

using namespace trainer;
using compute::gpu_test::random_vector;
using compute::gpu_test::rel_error;


TEST_CASE("cuda ViT forward and backward match the CPU backend", "[gpu][vit]") {
  const std::string name =
      GENERATE(as<std::string>{}, "vits_dino", "vits_dinov2", "vits_dinov3", "vitb_sam", "vitt_sam2", "vitb_sam2");
  INFO(name);
  test_shared::ModelStep cpu(compute::make_cpu_backend(2), name, {}, {128, 128}),
      gpu(compute::make_cuda_backend(0), name, {}, {128, 128});
  const compute::Shape4 in{2, 3, 128, 128};
  const auto images = random_vector(in.numel(), 1);
  const auto dy = random_vector(std::size_t(2) * 3 * 32 * 32, 2, -1e-2f, 1e-2f);
  cpu.run(images, in, dy);
  gpu.run(images, in, dy);
  CHECK(rel_error(gpu.heatmaps, cpu.heatmaps) < 1e-5);
  for (const auto& e : cpu.net.store().parameters()) {
    if (test_shared::gradient_is_zero_in_exact_arithmetic(e.name, cpu.net.store())) continue;  // rounding noise on both sides
    INFO(e.name);
    CHECK(rel_error(gpu.grad(e), cpu.grad(e)) < 1e-4);
  }
}

TEST_CASE("cuda vitb_sam at 256x256 matches the CPU backend: four windows, padding in each", "[gpu][vit][sam]") {
  // A 16x16 grid padded to 28x28: the windowed layers attend within 4 windows of 196 rows.
  const compute::Shape4 in{1, 3, 256, 256};
  test_shared::ModelStep cpu(compute::make_cpu_backend(2), "vitb_sam", {}, {256, 256}),
      gpu(compute::make_cuda_backend(0), "vitb_sam", {}, {256, 256});
  const auto images = random_vector(in.numel(), 3);
  const auto dy = random_vector(std::size_t(3) * 64 * 64, 4, -1e-2f, 1e-2f);
  cpu.run(images, in, dy);
  gpu.run(images, in, dy);
  CHECK(rel_error(gpu.heatmaps, cpu.heatmaps) < 1e-5);
  for (const auto& e : cpu.net.store().parameters()) {
    if (test_shared::gradient_is_zero_in_exact_arithmetic(e.name, cpu.net.store())) continue;
    INFO(e.name);
    CHECK(rel_error(gpu.grad(e), cpu.grad(e)) < 1e-4);
  }
}
