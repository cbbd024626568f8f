// The ViT backbones (vits_dino, vits_dinov2, vits_dinov3) on the GPU against the CPU backend: the
// same weights and images give the same heatmaps and the same gradient for every
// tensor (fp32, TF32 off), at 128x128 (8x8 patches, the position grid resized down).
#include <catch2/catch.hpp>

#include <string>  // std::string
#include <vector>  // std::vector

#include "gpu_test_util.hpp"
#include "model/heatmap_model.hpp"

using namespace trainer;
using compute::gpu_test::random_vector;
using compute::gpu_test::rel_error;

namespace {
struct VitRun {
  std::unique_ptr<compute::Backend> backend;
  model::HeatmapModel net;
  std::vector<float> heatmaps, grads;
  VitRun(std::unique_ptr<compute::Backend> b, const std::string& name)
      : backend(std::move(b)), net(*backend, {name, 3, 2}) {
    net.initialize(11, backend->default_stream());
  }
  void step(const std::vector<float>& images, compute::Shape4 in, const std::vector<float>& dy_host) {
    auto& s = backend->default_stream();
    compute::DeviceBuffer x(*backend, images.size()), dy(*backend, dy_host.size());
    backend->upload(x.data(), images.data(), images.size(), s);
    backend->upload(dy.data(), dy_host.data(), dy_host.size(), s);
    model::Context ctx{*backend, s, true, nullptr, nullptr};
    const auto y = net.forward(ctx, {x.data(), in});
    heatmaps.resize(y.shape.numel());
    backend->download(heatmaps.data(), y.data, heatmaps.size(), s);
    net.backward(ctx, {dy.data(), y.shape}, true);
    grads.resize(net.store().parameter_count());
    backend->download(grads.data(), net.store().grads_data(), grads.size(), s);
    s.synchronize();
  }
};
}  // namespace

TEST_CASE("cuda ViT forward and backward match the CPU backend", "[gpu][vit]") {
  const std::string name = GENERATE(as<std::string>{}, "vits_dino", "vits_dinov2", "vits_dinov3");
  INFO(name);
  VitRun cpu(compute::make_cpu_backend(2), name), gpu(compute::make_cuda_backend(0), name);
  const compute::Shape4 in{2, 3, 128, 128};
  const auto images = random_vector(in.numel(), 1);
  const auto dy = random_vector(std::size_t(2) * 3 * 32 * 32, 2, -1e-2f, 1e-2f);
  cpu.step(images, in, dy);
  gpu.step(images, in, dy);
  CHECK(rel_error(gpu.heatmaps, cpu.heatmaps) < 1e-5);
  for (const auto& e : cpu.net.store().parameters()) {
    // Zero in exact arithmetic (shift-invariant softmaxes): rounding noise on both sides.
    if (e.name.find("attention.key.bias") != std::string::npos || e.name == "head.deconv0.bias") continue;
    INFO(e.name);
    const std::vector<float> g(gpu.grads.begin() + long(e.offset), gpu.grads.begin() + long(e.offset + e.count));
    const std::vector<float> c(cpu.grads.begin() + long(e.offset), cpu.grads.begin() + long(e.offset + e.count));
    CHECK(rel_error(g, c) < 1e-4);
  }
}
