// The context model (model_type heatmap_mhcrnn): parameter names and shapes
// (lightning-pose's HeatmapTrackerMHCRNN with HeatmapMHCRNNHead), forward shapes
// and normalization, gradient announcement order, a finite-difference check of
// the whole backward pass, and the per-keypoint branch selection.
#include <catch2/catch.hpp>

#include <algorithm>  // std::copy, std::max
#include <cmath>
#include <numeric>
#include <string>

#include "model/mhcrnn_model.hpp"
#include "model_test_util.hpp"
#include "util/error.hpp"

using namespace trainer;
using model::MhcrnnModel;
using model::ModelSpec;

namespace {
struct Recorder : model::GradientReadyListener {
  std::vector<std::pair<std::size_t, std::size_t>> calls;
  void on_ready(std::size_t offset, std::size_t count, compute::Stream&) override { calls.push_back({offset, count}); }
};

// sum(heatmaps * r) for fixed r (a linear functional, so its gradient is r).
double probe(compute::Backend& b, MhcrnnModel& m, compute::DeviceBuffer& x, compute::Shape4 in,
             const std::vector<float>& r, bool training) {
  auto& s = b.default_stream();
  model::Context ctx{b, s, training, nullptr, nullptr};
  auto y = m.forward(ctx, {x.data(), in});
  std::vector<float> h(y.shape.numel());
  b.download(h.data(), y.data, h.size(), s);
  s.synchronize();
  double sum = 0;
  for (std::size_t i = 0; i < h.size(); ++i) sum += double(h[i]) * r[i];
  return sum;
}
}  // namespace

TEST_CASE("context model names follow lightning-pose's HeatmapMHCRNNHead", "[model][mhcrnn]") {
  auto b = model_test::cpu();
  MhcrnnModel m(*b, ModelSpec{"resnet18", 4, 2});
  const auto& p = m.store().parameters();
  const int K = 4, C4 = 512 / 4, H = 16 * K;
  const std::vector<std::pair<std::string, std::vector<int>>> head_mf = {
      {"head.head_mf.W_pre.weight", {C4, K, 3, 3}}, {"head.head_mf.W_pre.bias", {K}},
      {"head.head_mf.W_f.weight", {K, K, 3, 3}},    {"head.head_mf.W_f.bias", {K}},
      {"head.head_mf.H_f.0.weight", {H, 1, 2, 2}},  {"head.head_mf.H_f.0.bias", {H}},
      {"head.head_mf.H_f.1.weight", {H, 1, 2, 2}},  {"head.head_mf.H_f.1.bias", {K}},
      {"head.head_mf.W_b.weight", {K, K, 3, 3}},    {"head.head_mf.W_b.bias", {K}},
      {"head.head_mf.H_b.0.weight", {H, 1, 2, 2}},  {"head.head_mf.H_b.0.bias", {H}},
      {"head.head_mf.H_b.1.weight", {H, 1, 2, 2}},  {"head.head_mf.H_b.1.bias", {K}}};
  REQUIRE(p.size() > head_mf.size());
  const std::size_t first_mf = p.size() - head_mf.size();
  for (std::size_t i = 0; i < head_mf.size(); ++i) {
    CHECK(p[first_mf + i].name == head_mf[i].first);
    CHECK(p[first_mf + i].shape == head_mf[i].second);
  }
  // The single-frame branch is the heatmap model's head under head.head_sf.
  CHECK(m.store().find_parameter("head.head_sf.deconv0.weight") >= 0);
  CHECK(m.store().find_parameter("head.head_sf.deconv1.bias") >= 0);
  CHECK(m.store().find_parameter("head.head_sf.deconv2.weight") < 0);  // d = 2: two deconvs
  CHECK(m.store().find_parameter("backbone.layer4.1.bn2.weight") >= 0);
  CHECK(p.front().name == "backbone.conv1.weight");
}

TEST_CASE("context model needs downsample factor 2", "[model][mhcrnn]") {
  auto b = model_test::cpu();
  CHECK_THROWS_AS(MhcrnnModel(*b, ModelSpec{"resnet18", 3, 3}), UserError);
  CHECK_THROWS_AS(MhcrnnModel(*b, ModelSpec{"resnet18", 3, 1}), UserError);
}

TEST_CASE("context model: both branches are normalized heatmaps at input / 4", "[model][mhcrnn]") {
  // Stride 32 (ResNet: upsampling_factor 2) and stride 16 (ViT: factor 1).
  const std::string backbone = GENERATE(as<std::string>{}, "resnet18", "vits_dino");
  INFO(backbone);
  auto b = model_test::cpu();
  auto& s = b->default_stream();
  MhcrnnModel m(*b, ModelSpec{backbone, 3, 2});
  m.initialize(7, s);
  const compute::Shape4 in{2 * 5, 3, 64, 96};
  auto images = model_test::random_vector(in.numel(), 1);
  compute::DeviceBuffer x(*b, in.numel());
  b->upload(x.data(), images.data(), images.size(), s);
  model::Context ctx{*b, s, true, nullptr, nullptr};
  auto y = m.forward(ctx, {x.data(), in});
  REQUIRE(y.shape == compute::Shape4{4, 3, 16, 24});
  std::vector<float> h(y.shape.numel());
  b->download(h.data(), y.data, h.size(), s);
  s.synchronize();
  for (int p = 0; p < 12; ++p) {
    const auto plane = long(y.shape.plane());
    CHECK(std::accumulate(h.begin() + p * plane, h.begin() + (p + 1) * plane, 0.0) == Approx(1.0).epsilon(1e-4));
  }
}

TEST_CASE("context model announces every gradient once, in decreasing offsets", "[model][mhcrnn]") {
  const std::string backbone = GENERATE(as<std::string>{}, "resnet18", "vits_dino");
  INFO(backbone);
  auto b = model_test::cpu();
  auto& s = b->default_stream();
  MhcrnnModel m(*b, ModelSpec{backbone, 2, 2});
  m.initialize(3, s);
  const compute::Shape4 in{5, 3, 64, 64};
  auto images = model_test::random_vector(in.numel(), 2);
  compute::DeviceBuffer x(*b, in.numel());
  b->upload(x.data(), images.data(), images.size(), s);
  Recorder rec;
  model::Context ctx{*b, s, true, nullptr, &rec};
  auto y = m.forward(ctx, {x.data(), in});
  auto dy = model_test::random_vector(y.shape.numel(), 3);
  compute::DeviceBuffer d(*b, dy.size());
  b->upload(d.data(), dy.data(), dy.size(), s);
  for (bool train_backbone : {true, false}) {
    rec.calls.clear();
    m.backward(ctx, {d.data(), y.shape}, train_backbone);
    std::size_t covered = 0;
    for (std::size_t i = 1; i < rec.calls.size(); ++i) CHECK(rec.calls[i].first < rec.calls[i - 1].first);
    for (auto& c : rec.calls) covered += c.second;
    const auto head = m.store().group_range(model::ParamGroup::head);
    CHECK(covered == (train_backbone ? m.store().parameter_count() : head.count));
  }
}

TEST_CASE("context model backward matches finite differences", "[model][mhcrnn]") {
  auto b = model_test::cpu();
  auto& s = b->default_stream();
  MhcrnnModel m(*b, ModelSpec{"resnet18", 2, 2});
  m.initialize(5, s);
  auto& store = m.store();
  const compute::Shape4 in{5, 3, 64, 64};
  auto images = model_test::random_vector(in.numel(), 4);
  compute::DeviceBuffer x(*b, in.numel());
  b->upload(x.data(), images.data(), images.size(), s);
  model::Context ctx{*b, s, true, nullptr, nullptr};  // batch statistics: a fixed function of the input
  auto y = m.forward(ctx, {x.data(), in});
  auto r = model_test::random_vector(y.shape.numel(), 9);
  compute::DeviceBuffer dr(*b, r.size());
  b->upload(dr.data(), r.data(), r.size(), s);
  m.backward(ctx, {dr.data(), y.shape}, true);
  s.synchronize();
  const std::vector<std::string> names = {
      "head.head_mf.W_pre.weight", "head.head_mf.W_f.bias",     "head.head_mf.H_f.0.weight",
      "head.head_mf.H_f.0.bias",   "head.head_mf.H_b.1.weight", "head.head_mf.H_b.1.bias",
      "head.head_mf.W_b.weight",   "head.head_sf.deconv0.weight", "backbone.layer4.1.conv2.weight"};
  for (const auto& name : names) {
    INFO(name);
    const auto idx = std::size_t(store.find_parameter(name));
    const auto count = store.parameters()[idx].count;
    auto grad = std::vector<float>(count);
    b->download(grad.data(), store.grad(idx), count, s);
    auto values = store.download_param(idx, s);
    // The entry with the largest gradient, perturbed both ways.
    std::size_t at = 0;
    for (std::size_t i = 0; i < count; ++i)
      if (std::fabs(grad[i]) > std::fabs(grad[at])) at = i;
    const float eps = 1e-2f * std::max(1.f, std::fabs(values[at]));
    auto plus = values, minus = values;
    plus[at] += eps;
    minus[at] -= eps;
    store.upload_param(idx, plus, s);
    const double lp = probe(*b, m, x, in, r, true);
    store.upload_param(idx, minus, s);
    const double lm = probe(*b, m, x, in, r, true);
    store.upload_param(idx, values, s);
    const double numeric = (lp - lm) / (2.0 * eps);
    CHECK(numeric == Approx(grad[at]).epsilon(0.01).margin(1e-6));
  }
}

TEST_CASE("a context sequence: each frame through the backbone once, the rows' heatmaps as forward's, gradients "
          "summed over the rows that read a frame",
          "[model][mhcrnn]") {
  // lightning-pose's unlabelled context batch: R + 4 consecutive frames, row i = frames
  // i .. i + 4. In eval mode (running statistics) forward_sequence must give forward's
  // heatmaps on the rows written out; in train mode its gradients must be those of its
  // own function (finite differences), through the per-frame sum in backward.
  auto b = model_test::cpu();
  auto& s = b->default_stream();
  MhcrnnModel m(*b, ModelSpec{"resnet18", 2, 2});
  m.initialize(5, s);
  auto& store = m.store();
  const int rows = 3;
  const compute::Shape4 seq{rows + 4, 3, 64, 64}, expanded{rows * 5, 3, 64, 64};
  const auto frames = model_test::random_vector(seq.numel(), 12);
  std::vector<float> written(expanded.numel());
  const std::size_t frame = std::size_t(3) * 64 * 64;
  for (int i = 0; i < rows; ++i)
    std::copy(frames.begin() + long(std::size_t(i) * frame), frames.begin() + long(std::size_t(i + 5) * frame),
              written.begin() + long(std::size_t(i) * 5 * frame));
  compute::DeviceBuffer xs(*b, seq.numel()), xe(*b, expanded.numel());
  b->upload(xs.data(), frames.data(), frames.size(), s);
  b->upload(xe.data(), written.data(), written.size(), s);
  model::Context eval{*b, s, false, nullptr, nullptr};
  const auto download = [&](compute::TensorView y) {
    std::vector<float> h(y.shape.numel());
    b->download(h.data(), y.data, h.size(), s);
    s.synchronize();
    return h;
  };
  const auto from_sequence = download(m.forward_sequence(eval, {xs.data(), seq}, rows));
  const auto from_rows = download(m.forward(eval, {xe.data(), expanded}));
  REQUIRE(from_sequence.size() == from_rows.size());
  double worst = 0;
  for (std::size_t i = 0; i < from_rows.size(); ++i)
    worst = std::max(worst, double(std::fabs(from_sequence[i] - from_rows[i])));
  CHECK(worst < 1e-6);  // heatmaps sum to 1 per plane: an absolute bound
  CHECK_THROWS_AS(m.forward_sequence(eval, {xs.data(), seq}, rows + 1), SystemError);

  model::Context train{*b, s, true, nullptr, nullptr};
  auto y = m.forward_sequence(train, {xs.data(), seq}, rows);
  CHECK(y.shape.n == 2 * rows);
  auto r = model_test::random_vector(y.shape.numel(), 13);
  compute::DeviceBuffer dr(*b, r.size());
  b->upload(dr.data(), r.data(), r.size(), s);
  m.backward(train, {dr.data(), y.shape}, true);
  s.synchronize();
  const auto probe_sequence = [&]() {
    const auto h = download(m.forward_sequence(train, {xs.data(), seq}, rows));
    double sum = 0;
    for (std::size_t i = 0; i < h.size(); ++i) sum += double(h[i]) * r[i];
    return sum;
  };
  // Steps per tensor: the stem's largest-gradient weight sits near ReLU and max-pool
  // kinks of this random input (its difference quotient moves linearly with the step:
  // 0.262, 0.279, 0.288, 0.290, 0.293 at 3e-3 .. 3e-5 against 0.2928), so it takes a
  // smaller one and a looser bound for float32's rounding of the loss.
  struct Probe {
    const char* name;
    float step;
    double tolerance;
  };
  for (const Probe& p : {Probe{"backbone.conv1.weight", 3e-5f, 0.02}, Probe{"backbone.layer1.0.conv1.weight", 1e-3f, 0.01},
                         Probe{"backbone.layer4.1.conv2.weight", 1e-3f, 0.01},
                         Probe{"head.head_mf.W_pre.weight", 1e-3f, 0.01}}) {
    const char* name = p.name;
    INFO(name);
    const auto idx = std::size_t(store.find_parameter(name));
    const auto count = store.parameters()[idx].count;
    std::vector<float> grad(count);
    b->download(grad.data(), store.grad(idx), count, s);
    auto values = store.download_param(idx, s);
    std::size_t at = 0;
    for (std::size_t i = 0; i < count; ++i)
      if (std::fabs(grad[i]) > std::fabs(grad[at])) at = i;
    const float eps = p.step * std::max(1.f, std::fabs(values[at]));
    auto plus = values, minus = values;
    plus[at] += eps;
    minus[at] -= eps;
    store.upload_param(idx, plus, s);
    const double lp = probe_sequence();
    store.upload_param(idx, minus, s);
    const double lm = probe_sequence();
    store.upload_param(idx, values, s);
    CHECK((lp - lm) / (2.0 * eps) == Approx(grad[at]).epsilon(p.tolerance).margin(1e-6));
  }
}

TEST_CASE("predictions take the more confident branch per keypoint", "[model][mhcrnn]") {
  // batch 1, 2 keypoints; rows: [crnn; sf].
  const std::vector<float> coords = {1, 2, 3, 4, /* sf */ 10, 20, 30, 40};
  const std::vector<float> conf = {0.9f, 0.2f, /* sf */ 0.5f, 0.2f};
  std::vector<float> c, k;
  MhcrnnModel::select_keypoints(1, 2, coords, conf, c, k);
  CHECK(c == std::vector<float>{1, 2, 30, 40});  // tie -> single frame (torch.gt)
  CHECK(k == std::vector<float>{0.9f, 0.2f});
}
