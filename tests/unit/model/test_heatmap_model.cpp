// Forward shapes and normalization, initialization, gradient announcement order,
// and a finite-difference check of the whole model's backward pass.
#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>
#include <set>

#include "compute/losses/heatmap_mse.hpp"  // heatmap_mse_loss
#include "model_test_util.hpp"

using namespace trainer;
using model::HeatmapModel;
using model::ModelSpec;

namespace {
struct Recorder : model::GradientReadyListener {
  std::vector<std::pair<std::size_t, std::size_t>> calls;
  void on_ready(std::size_t offset, std::size_t count, compute::Stream&) override { calls.push_back({offset, count}); }
};

// Loss of the model on fixed inputs (forward in training mode, BN batch stats).
// x holds the images and must outlive a following backward (layers keep views).
double loss_of(compute::Backend& b, HeatmapModel& m, compute::DeviceBuffer& x, compute::Shape4 in,
               const std::vector<float>& kp_hm, std::vector<float>* dpred_out = nullptr) {
  auto& s = b.default_stream();
  compute::DeviceBuffer kp(b, kp_hm.size());
  b.upload(kp.data(), kp_hm.data(), kp_hm.size(), s);
  model::Context ctx{b, s, true, nullptr, nullptr};
  auto y = m.forward(ctx, {x.data(), in});
  compute::DeviceBuffer targets(b, y.shape.numel()), mask(b, std::size_t(y.shape.n) * y.shape.c),
      loss(b, 1), dpred(b, y.shape.numel());
  b.heatmap_targets(kp.data(), {targets.data(), y.shape}, 1.25f, mask.data(), s);
  b.heatmap_loss(y, {targets.data(), y.shape}, mask.data(), compute::heatmap_mse_loss(), loss.data(), dpred.data(), 1.f, s);
  float l = 0;
  b.download(&l, loss.data(), 1, s);
  if (dpred_out) {
    dpred_out->resize(y.shape.numel());
    b.download(dpred_out->data(), dpred.data(), dpred_out->size(), s);
  }
  s.synchronize();
  return l;
}
}  // namespace

TEST_CASE("heatmaps have size input / 2^d and each sums to 1", "[model]") {
  auto b = model_test::cpu();
  for (int d : {1, 2, 3}) {
    HeatmapModel m(*b, ModelSpec{"resnet18", 3, d});
    m.initialize(7, b->default_stream());
    const compute::Shape4 in{2, 3, 64, 96};
    auto images = model_test::random_vector(in.numel(), 1);
    compute::DeviceBuffer x(*b, in.numel());
    b->upload(x.data(), images.data(), images.size(), b->default_stream());
    model::Context ctx{*b, b->default_stream(), true, nullptr, nullptr};
    auto y = m.forward(ctx, {x.data(), in});
    CHECK(y.shape == compute::Shape4{2, 3, 64 >> d, 96 >> d});
    std::vector<float> h(y.shape.numel());
    b->download(h.data(), y.data, h.size(), b->default_stream());
    b->default_stream().synchronize();
    for (int p = 0; p < 6; ++p) {
      const double sum = std::accumulate(h.begin() + long(p * y.shape.plane()), h.begin() + long((p + 1) * y.shape.plane()), 0.0);
      CHECK(sum == Approx(1.0).epsilon(1e-4));
    }
  }
}

TEST_CASE("initialization is deterministic and follows the documented rules", "[model]") {
  auto b = model_test::cpu();
  auto& s = b->default_stream();
  HeatmapModel m1(*b, ModelSpec{"resnet18", 5, 2}), m2(*b, ModelSpec{"resnet18", 5, 2});
  m1.initialize(3, s);
  m2.initialize(3, s);
  const auto conv = std::size_t(m1.store().find_parameter("backbone.layer3.0.conv1.weight"));
  const auto w1 = m1.store().download_param(conv, s);
  CHECK(w1 == m2.store().download_param(conv, s));
  m2.initialize(4, s);
  CHECK(w1 != m2.store().download_param(conv, s));
  // Kaiming normal, fan_out = 256 * 3 * 3: std = sqrt(2 / 2304).
  double sq = 0;
  for (float v : w1) sq += double(v) * v;
  CHECK(std::sqrt(sq / w1.size()) == Approx(std::sqrt(2.0 / 2304)).epsilon(0.02));
  const auto bn = m1.store().download_param(std::size_t(m1.store().find_parameter("backbone.bn1.weight")), s);
  for (float v : bn) CHECK(v == 1.f);
  const auto rv = m1.store().download_buffer(std::size_t(m1.store().find_buffer("backbone.bn1.running_var")), s);
  for (float v : rv) CHECK(v == 1.f);
  // Xavier uniform with gain 0.01: |w| <= 0.01 * sqrt(6 / (9 * (5 + 128))).
  const auto head = m1.store().download_param(std::size_t(m1.store().find_parameter("head.deconv0.weight")), s);
  const double bound = 0.01 * std::sqrt(6.0 / (9.0 * (5 + 128)));
  double maxabs = 0;
  for (float v : head) maxabs = std::max(maxabs, double(std::fabs(v)));
  CHECK(maxabs <= bound);
  CHECK(maxabs > 0.9 * bound);
  const auto bias = m1.store().download_param(std::size_t(m1.store().find_parameter("head.deconv0.bias")), s);
  for (float v : bias) CHECK(v == 0.f);
}

TEST_CASE("backward announces every gradient once, in strictly decreasing offset order", "[model]") {
  auto b = model_test::cpu();
  for (const char* arch : {"resnet18", "resnet50"}) {
    HeatmapModel m(*b, ModelSpec{arch, 2, 2});
    m.initialize(1, b->default_stream());
    const compute::Shape4 in{2, 3, 32, 32};
    auto images = model_test::random_vector(in.numel(), 2);
    compute::DeviceBuffer x(*b, in.numel());
    b->upload(x.data(), images.data(), images.size(), b->default_stream());
    Recorder rec;
    model::Context ctx{*b, b->default_stream(), true, nullptr, &rec};
    auto y = m.forward(ctx, {x.data(), in});
    auto dy = model_test::random_vector(y.shape.numel(), 3, 1e-3f);
    compute::DeviceBuffer d(*b, dy.size());
    b->upload(d.data(), dy.data(), dy.size(), b->default_stream());
    m.backward(ctx, {d.data(), y.shape}, true);
    REQUIRE(rec.calls.size() == m.store().parameters().size());
    std::size_t expected_end = m.store().parameter_count();
    for (const auto& c : rec.calls) {
      CHECK(c.first + c.second == expected_end);  // contiguous, from the end down
      expected_end = c.first;
    }
    CHECK(expected_end == 0);
    // Frozen backbone: only the head's gradients.
    rec.calls.clear();
    m.forward(ctx, {x.data(), in});
    m.backward(ctx, {d.data(), y.shape}, false);
    for (const auto& c : rec.calls) CHECK(c.first >= m.store().group_range(model::ParamGroup::head).offset);
    CHECK(rec.calls.size() == 4);
  }
}

TEST_CASE("whole-model gradients match finite differences of the loss", "[model]") {
  auto b = model_test::cpu();
  auto& s = b->default_stream();
  HeatmapModel m(*b, ModelSpec{"resnet18", 2, 2});
  m.initialize(11, s);
  const compute::Shape4 in{2, 3, 64, 64};
  const auto images = model_test::random_vector(in.numel(), 5);
  compute::DeviceBuffer x(*b, in.numel());
  b->upload(x.data(), images.data(), images.size(), s);
  auto kp = model_test::random_keypoints(2, 2, 16, 6);  // heatmap pixels (16 x 16 heatmaps)
  std::vector<float> dpred;
  loss_of(*b, m, x, in, kp, &dpred);
  {
    compute::DeviceBuffer d(*b, dpred.size());
    b->upload(d.data(), dpred.data(), dpred.size(), s);
    model::Context ctx{*b, s, true, nullptr, nullptr};
    m.backward(ctx, {d.data(), {2, 2, 16, 16}}, true);
  }
  std::vector<float> grads(m.store().parameter_count());
  b->download(grads.data(), m.store().grads_data(), grads.size(), s);
  std::vector<float> params(m.store().parameter_count());
  b->download(params.data(), m.store().params_data(), params.size(), s);
  s.synchronize();
  // (Head weights are left to the PyTorch parity test: their gradients are so small
  // that float32 loss differences cannot resolve them.)
  for (const char* name : {"head.deconv1.bias", "backbone.layer4.1.bn2.weight", "backbone.layer3.0.downsample.0.weight",
                           "backbone.layer1.0.conv2.weight"}) {
    const auto& e = m.store().parameters()[std::size_t(m.store().find_parameter(name))];
    // The element with the largest gradient of this tensor.
    std::size_t at = e.offset;
    for (std::size_t i = e.offset; i < e.offset + e.count; ++i)
      if (std::fabs(grads[i]) > std::fabs(grads[at])) at = i;
    const float h = std::max(1e-3f, 1e-2f * std::fabs(params[at]));
    auto perturbed = params;
    perturbed[at] = params[at] + h;
    b->upload(m.store().params_data(), perturbed.data(), perturbed.size(), s);
    const double up = loss_of(*b, m, x, in, kp);
    perturbed[at] = params[at] - h;
    b->upload(m.store().params_data(), perturbed.data(), perturbed.size(), s);
    const double down = loss_of(*b, m, x, in, kp);
    b->upload(m.store().params_data(), params.data(), params.size(), s);
    const double numeric = (up - down) / (2.0 * h);
    INFO(name << " analytic " << grads[at] << " numeric " << numeric);
    CHECK(numeric == Approx(grads[at]).epsilon(0.05).margin(1e-7));
  }
}
