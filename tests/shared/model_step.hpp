#pragma once
// One forward and backward of a heatmap model on given images and a given heatmap
// gradient, its heatmaps and every parameter's gradient brought to the host: the
// step that the CPU autocast tests (tests/unit) and the GPU twin tests (tests/gpu)
// compare between backends and precisions.
#include <functional>  // std::function
#include <memory>      // std::unique_ptr
#include <string>      // std::string
#include <utility>     // std::move
#include <vector>      // std::vector

#include "compute/backend.hpp"
#include "model/heatmap_model.hpp"

namespace trainer::test_shared {

struct ModelStep {
  std::unique_ptr<compute::Backend> backend;
  model::HeatmapModel net;  // 3 keypoints, downsample factor 2, initialised with seed 11
  std::vector<float> heatmaps, grads;

  // `before_initialize` sets the backend up once the model is built on it.
  // image: the input size, for a backbone whose tensors depend on it (vitb_sam).
  ModelStep(std::unique_ptr<compute::Backend> b, const std::string& backbone,
            const std::function<void(compute::Backend&)>& before_initialize = {}, model::ImageSize image = {})
      : backend(std::move(b)), net(*backend, model::ModelSpec{backbone, 3, 2, image}) {
    if (before_initialize) before_initialize(*backend);
    net.initialize(11, backend->default_stream());
  }

  // A training-mode forward of `images` (shape `in`) and the backward of `dy_host`.
  void run(const std::vector<float>& images, compute::Shape4 in, const std::vector<float>& dy_host) {
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

  // The last run's gradient of one parameter tensor.
  std::vector<float> grad(const model::TensorEntry& e) const {
    return std::vector<float>(grads.begin() + long(e.offset), grads.begin() + long(e.offset + e.count));
  }
};

// Parameters whose true gradient is zero, so that both sides of a comparison hold
// rounding noise or nothing: the attention key bias and the head's last bias (under
// shift-invariant softmaxes; head.deconv0.bias for a stride-16 ViT at d = 2,
// head.deconv1.bias for SAM2's stride 32) and DINOv2's / DINOv3's unused mask token.
inline bool gradient_is_zero_in_exact_arithmetic(const std::string& name, const model::ParameterStore& store) {
  int last = 0;
  while (store.find_parameter("head.deconv" + std::to_string(last + 1) + ".bias") >= 0) ++last;
  return name.find("attention.key.bias") != std::string::npos ||
         name == "head.deconv" + std::to_string(last) + ".bias" || name.find("mask_token") != std::string::npos;
}

}  // namespace trainer::test_shared
