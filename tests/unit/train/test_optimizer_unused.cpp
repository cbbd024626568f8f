// AdamW as lightning-pose runs it: torch's default weight decay (lightning-pose builds
// AdamW from the learning rate alone), and tensors the forward never reads (DINOv2's
// mask_token, SAM's rel_pos and neck) left alone, as PyTorch's optimizers skip a
// parameter whose grad is None.
#include <catch2/catch.hpp>

#include <cmath>   // std::abs
#include <string>  // std::string
#include <vector>  // std::vector

#include "compute/backend.hpp"        // compute::make_cpu_backend
#include "model/heatmap_model.hpp"    // model::HeatmapModel
#include "model/parameter_store.hpp"  // model::ParameterStore
#include "train/optimizer.hpp"        // train::Optimizer

using namespace trainer;

TEST_CASE("trained_ranges: a group's range less its unused tensors, merged where contiguous", "[train][optimizer]") {
  auto be = compute::make_cpu_backend(1);
  model::ParameterStore store(*be);
  const auto a = store.add_parameter("a", {3}, model::ParamGroup::backbone, {});
  const auto b = store.add_parameter("b", {4}, model::ParamGroup::backbone, {});
  const auto c = store.add_parameter("c", {5}, model::ParamGroup::backbone, {});
  const auto d = store.add_parameter("d", {2}, model::ParamGroup::backbone, {});
  store.add_parameter("h", {6}, model::ParamGroup::head, {});
  store.mark_unused(b);
  store.allocate();
  const auto ranges = store.trained_ranges(model::ParamGroup::backbone);
  REQUIRE(ranges.size() == 2);
  CHECK(ranges[0].offset == store.parameters()[a].offset);
  CHECK(ranges[0].count == 3);
  CHECK(ranges[1].offset == store.parameters()[c].offset);
  CHECK(ranges[1].count == 5 + 2);  // c and d, one range
  const auto head = store.trained_ranges(model::ParamGroup::head);
  REQUIRE(head.size() == 1);
  CHECK(head[0].offset == store.group_range(model::ParamGroup::head).offset);
  CHECK(head[0].count == 6);
  store.mark_unused(a);
  store.mark_unused(c);
  store.mark_unused(d);
  CHECK(store.trained_ranges(model::ParamGroup::backbone).empty());
}

TEST_CASE("AdamW neither steps nor decays a tensor the forward never reads", "[train][optimizer]") {
  auto be = compute::make_cpu_backend(1);
  compute::Stream& s = be->default_stream();
  model::ParameterStore store(*be);
  const auto used = store.add_parameter("used", {4}, model::ParamGroup::head, {});
  const auto unused = store.add_parameter("unused", {4}, model::ParamGroup::head, {});
  const auto zero_grad = store.add_parameter("zero_grad", {4}, model::ParamGroup::head, {});
  store.mark_unused(unused);
  store.allocate();
  for (const auto i : {used, unused, zero_grad}) store.upload_param(i, {1.f, -2.f, 3.f, -4.f}, s);
  const std::vector<float> g = {0.5f, 0.5f, -0.5f, 0.25f};
  be->upload(store.grad(used), g.data(), g.size(), s);

  train::OptimizerConfig config;
  config.type = "AdamW";
  config.weight_decay = 0.1;
  train::Optimizer optimizer(store, config);
  optimizer.set_group(model::ParamGroup::head, 0.01, true);
  for (int step = 0; step < 3; ++step) optimizer.step(s);

  const auto after_unused = store.download_param(unused, s);
  CHECK(after_unused == std::vector<float>{1.f, -2.f, 3.f, -4.f});
  const std::size_t u = store.parameters()[unused].offset;
  std::vector<float> m(4), v(4);
  be->download(m.data(), optimizer.exp_avg() + u, 4, s);
  be->download(v.data(), optimizer.exp_avg_sq() + u, 4, s);
  s.synchronize();
  CHECK(m == std::vector<float>(4, 0.f));
  CHECK(v == std::vector<float>(4, 0.f));
  // A used tensor whose gradient happens to be zero is decayed, as PyTorch decays a
  // parameter whose grad is a zero tensor: 3 steps of (1 - lr * wd).
  const auto after_zero = store.download_param(zero_grad, s);
  const double shrink = (1 - 0.01 * 0.1) * (1 - 0.01 * 0.1) * (1 - 0.01 * 0.1);
  for (int i = 0; i < 4; ++i) CHECK(after_zero[i] == Approx(double((std::vector<float>{1, -2, 3, -4})[i]) * shrink));
  const auto after_used = store.download_param(used, s);
  CHECK(after_used[0] < 1.f - 0.02f);  // three steps of about lr against the gradient's sign
}

TEST_CASE("torch's default weight decay per optimizer: AdamW 1e-2, Adam 0", "[train][optimizer]") {
  CHECK(train::default_weight_decay(train::OptimizerType::adamw) == 1e-2);
  CHECK(train::default_weight_decay(train::OptimizerType::adam) == 0.0);
}

TEST_CASE("the ViTs mark what lightning-pose's forward never reads as unused", "[train][optimizer][vit]") {
  auto be = compute::make_cpu_backend(1);
  const auto unused_names = [&](const char* backbone) {
    model::HeatmapModel net(*be, model::ModelSpec{backbone, 2, 2});
    std::vector<std::string> names;
    for (const auto& e : net.store().parameters())
      if (e.unused) names.push_back(e.name);
    return names;
  };
  CHECK(unused_names("vits_dino").empty());
  CHECK(unused_names("vits_dinov2") == std::vector<std::string>{"backbone.vision_encoder.embeddings.mask_token"});
  CHECK(unused_names("vits_dinov3") == std::vector<std::string>{"backbone.vision_encoder.embeddings.mask_token"});
  const auto sam = unused_names("vitb_sam");
  CHECK(sam.size() == 12 * 2 + 6);  // every layer's rel_pos_h/_w, the neck's six tensors
  for (const auto& name : sam)
    CHECK((name.find(".attn.rel_pos_") != std::string::npos || name.find(".neck.") != std::string::npos));
  CHECK(unused_names("vitt_sam2").empty());
  CHECK(unused_names("resnet18").empty());
}
