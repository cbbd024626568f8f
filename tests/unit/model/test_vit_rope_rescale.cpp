// DINOv3's train-time RoPE coordinate rescale (model/rope_tables.hpp, model/vit.hpp):
// the keyed draw, the tables op with the factor read from device memory, and a
// training step that draws, against an eval-mode forward. The factor's effect on
// gradients against PyTorch: tests/integration/parity_vit.sh.
#include <catch2/catch.hpp>

#include <cmath>   // std::cos, std::sin, std::log, M_PI
#include <set>     // std::set
#include <vector>  // std::vector

#include "compute/backend.hpp"
#include "compute/transformer_ops.hpp"
#include "model/heatmap_model.hpp"
#include "model/rope_tables.hpp"
#include "model_test_util.hpp"

using namespace trainer;

TEST_CASE("rope_rescale_draw: log-uniform in [1/2, 2), keyed by seed, epoch, batch and forward", "[model][vit][rope]") {
  const model::StepKey key{7, 3, 11};
  const float a = model::rope_rescale_draw(key, 0, 2.f);
  CHECK(a == model::rope_rescale_draw(key, 0, 2.f));  // a resumed run, another rank, a replay: the same
  CHECK(a != model::rope_rescale_draw(key, 1, 2.f));  // the unlabelled frames' forward draws its own
  CHECK(a != model::rope_rescale_draw({8, 3, 11}, 0, 2.f));
  CHECK(a != model::rope_rescale_draw({7, 4, 11}, 0, 2.f));
  CHECK(a != model::rope_rescale_draw({7, 3, 12}, 0, 2.f));
  // Over many steps: log(factor) uniform in [-ln 2, ln 2).
  const int n = 20000;
  double sum = 0, lowest = 10, highest = 0;
  int below_one = 0, bins[4] = {0, 0, 0, 0};
  std::set<float> distinct;
  for (int e = 0; e < 20; ++e)
    for (int b = 0; b < n / 20; ++b) {
      const float f = model::rope_rescale_draw({42, e, b}, 0, 2.f);
      REQUIRE(f >= 0.5f);
      REQUIRE(f <= 2.f);
      const double u = std::log(double(f)) / std::log(2.0);  // in [-1, 1)
      sum += u;
      lowest = std::min(lowest, double(f)), highest = std::max(highest, double(f));
      below_one += f < 1.f;
      ++bins[std::min(3, int((u + 1) * 2))];
      distinct.insert(f);
    }
  CHECK(std::abs(sum / n) < 0.02);
  CHECK(std::abs(below_one / double(n) - 0.5) < 0.02);
  for (int q : bins) CHECK(std::abs(q / double(n) - 0.25) < 0.02);
  CHECK(lowest < 0.505);
  CHECK(highest > 1.98);
  CHECK(distinct.size() > std::size_t(n * 0.99));
  CHECK_THROWS(model::rope_rescale_draw(key, 0, 1.f));
}

TEST_CASE("rotary_tables: factor 1 gives the eval-mode tables bit for bit; another scales the coordinates",
          "[model][vit][rope]") {
  auto b = model_test::cpu();
  auto& s = b->default_stream();
  auto& ops = b->transformer_ops();
  const int h = 3, w = 5, D = 64, half = D / 2;
  const auto eval = model::rope_tables(h, w, D, 100.f);
  compute::DeviceBuffer factor(*b, 1), inv_freq(*b, eval.inv_freq.size()), cos(*b, eval.cos.size()),
      sin(*b, eval.sin.size());
  b->upload(inv_freq.data(), eval.inv_freq.data(), eval.inv_freq.size(), s);
  std::vector<float> got_cos(eval.cos.size()), got_sin(eval.sin.size());
  const auto tables = [&](float f) {
    b->set_values(factor.data(), &f, 1, s);
    ops.rotary_tables(factor.data(), inv_freq.data(), cos.data(), sin.data(), h, w, D, s);
    b->download(got_cos.data(), cos.data(), got_cos.size(), s);
    b->download(got_sin.data(), sin.data(), got_sin.size(), s);
    s.synchronize();
  };
  tables(1.f);
  CHECK(got_cos == eval.cos);
  CHECK(got_sin == eval.sin);
  const float f = 1.6180339f;
  tables(f);
  int checked = 0;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int i = 0; i < half; ++i) {
        const double c = (i < D / 4 ? 2.0 * (y + 0.5) / h - 1.0 : 2.0 * (x + 0.5) / w - 1.0) * f;
        const double angle = 2.0 * M_PI * c * eval.inv_freq[std::size_t(i % (D / 4))];
        const std::size_t at = std::size_t((y * w + x) * half + i);
        INFO(y << "," << x << " " << i);
        CHECK(got_cos[at] == Approx(std::cos(angle)).margin(4e-6));
        CHECK(got_sin[at] == Approx(std::sin(angle)).margin(4e-6));
        ++checked;
      }
  CHECK(checked == h * w * half);
  CHECK(got_cos != eval.cos);
  CHECK_THROWS(ops.rotary_tables(factor.data(), inv_freq.data(), cos.data(), sin.data(), h, w, 6, s));
}

namespace {

struct Dinov3Net {
  std::unique_ptr<compute::Backend> b = model_test::cpu();
  compute::Stream& s = b->default_stream();
  model::HeatmapModel net{*b, model::ModelSpec{"vits_dinov3", 2, 2}};
  compute::Shape4 in{2, 3, 48, 80};  // a 3 x 5 patch grid
  compute::DeviceBuffer x{*b, in.numel()};
  Dinov3Net() {
    net.initialize(5, s);
    const auto images = model_test::random_vector(in.numel(), 6);
    b->upload(x.data(), images.data(), images.size(), s);
  }
  std::vector<float> forward(bool training) {
    model::Context ctx{*b, s, training, nullptr, nullptr};
    const auto y = net.forward(ctx, {x.data(), in});
    std::vector<float> out(y.shape.numel());
    b->download(out.data(), y.data, out.size(), s);
    s.synchronize();
    return out;
  }
  void prepare(const model::StepKey& key, int forwards) {
    model::Context ctx{*b, s, true, nullptr, nullptr};
    net.prepare_training_step(ctx, key, forwards);
  }
};

}  // namespace

TEST_CASE("a vits_dinov3 training step turns with its drawn RoPE factor; eval and undrawn forwards do not",
          "[model][vit][rope]") {
  Dinov3Net n;
  const auto eval = n.forward(false);
  CHECK(n.forward(true) == eval);  // a training forward no draw was made for: eval-mode coordinates
  CHECK(n.net.backbone().training_draws().empty());

  const model::StepKey key{1, 0, 4};
  n.prepare(key, 2);
  const auto draws = n.net.backbone().training_draws();
  REQUIRE(draws.size() == 1);
  CHECK(draws[0].first == "rope_rescale");
  REQUIRE(draws[0].second.size() == 2);
  CHECK(draws[0].second[0] == model::rope_rescale_draw(key, 0, 2.f));
  CHECK(draws[0].second[1] == model::rope_rescale_draw(key, 1, 2.f));
  const auto labelled = n.forward(true);
  const auto unlabelled = n.forward(true);  // the step's second training forward: its own factor
  const auto third = n.forward(true);       // no draw left: eval-mode coordinates again
  CHECK(labelled != eval);
  CHECK(unlabelled != eval);
  CHECK(unlabelled != labelled);
  CHECK(third == eval);
  CHECK(n.forward(false) == eval);  // validation between steps is unaffected

  // The same key gives the same forward (a resumed run); another step, another one.
  n.prepare(key, 1);
  CHECK(n.forward(true) == labelled);
  n.prepare({1, 0, 5}, 1);
  CHECK(n.forward(true) != labelled);
}

TEST_CASE("backbones without RoPE draw nothing", "[model][vit][rope]") {
  auto b = model_test::cpu();
  auto& s = b->default_stream();
  for (const char* name : {"vits_dino", "resnet18"}) {
    model::HeatmapModel net(*b, model::ModelSpec{name, 2, 2});
    model::Context ctx{*b, s, true, nullptr, nullptr};
    net.prepare_training_step(ctx, {1, 0, 0}, 2);
    INFO(name);
    CHECK(net.backbone().training_draws().empty());
  }
}
