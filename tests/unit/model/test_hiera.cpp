// SAM2's Hiera backbones (model/hiera.hpp): Sam2HieraDetModel's names, shapes, order
// and counts, the stride-32 head, a CPU training step, gradients against finite
// differences through the pooled and windowed blocks, and the inputs it refuses.
// Gradients against PyTorch: tests/integration/parity_vit.sh.
#include <catch2/catch.hpp>

#include <cmath>   // std::sqrt, std::fabs, std::isfinite
#include <string>  // std::string
#include <vector>  // std::vector

#include "compute/backend.hpp"
#include "model/backbone_registry.hpp"  // make_backbone, backbone_tensor_name
#include "model/heatmap_model.hpp"
#include "model/hiera.hpp"
#include "model/make_model.hpp"  // make_pose_model
#include "../../shared/model_step.hpp"  // test_shared::ModelStep
#include "model_test_util.hpp"
#include "util/error.hpp"

using namespace trainer;

namespace {

std::size_t element_count(const model::ParameterStore& store) {
  std::size_t count = 0;
  for (const auto& e : store.parameters()) count += e.count;
  return count;
}

}  // namespace

TEST_CASE("SAM2 backbones register Sam2HieraDetModel's tensors under lightning-pose's names", "[model][sam2]") {
  auto b = model_test::cpu();
  {  // Element counts of the three SAM 2.1 Hiera encoders (Sam2HieraDetModel, no neck).
    const std::pair<const char*, std::size_t> sizes[] = {
        {"vitt_sam2", 26849472}, {"vits_sam2", 33947328}, {"vitb_sam2", 68675712}};
    for (const auto& [name, count] : sizes) {
      INFO(name);
      model::ParameterStore store(*b);  // names and shapes only: nothing allocated
      const auto backbone = model::make_backbone(name, store, "backbone.");
      CHECK(element_count(store) == count);
      CHECK(backbone->stride() == 32);
    }
  }
  model::HeatmapModel net(*b, model::ModelSpec{"vitt_sam2", 3, 2});
  const auto& p = net.store().parameters();
  const std::string root = "backbone.vision_encoder.";
  CHECK(net.backbone().out_channels() == 768);
  CHECK(p[0].name == root + "pos_embed");
  CHECK(p[0].shape == std::vector<int>{1, 96, 7, 7});
  CHECK(p[1].name == root + "pos_embed_window");
  CHECK(p[1].shape == std::vector<int>{1, 96, 8, 8});
  CHECK(p[2].name == root + "patch_embed.projection.weight");
  CHECK(p[2].shape == std::vector<int>{96, 3, 7, 7});
  CHECK(p[3].name == root + "patch_embed.projection.bias");
  // Block 0 (stage 0): layer_norm1, attn.qkv, attn.proj, layer_norm2, mlp.proj_in/out.
  const char* block[] = {"layer_norm1.weight", "layer_norm1.bias", "attn.qkv.weight",     "attn.qkv.bias",
                         "attn.proj.weight",   "attn.proj.bias",   "layer_norm2.weight",  "layer_norm2.bias",
                         "mlp.proj_in.weight", "mlp.proj_in.bias", "mlp.proj_out.weight", "mlp.proj_out.bias"};
  for (std::size_t i = 0; i < std::size(block); ++i) CHECK(p[4 + i].name == root + "blocks.0." + block[i]);
  CHECK(p[4 + 2].shape == std::vector<int>{288, 96});
  // Block 1 starts stage 1: 96 in, 192 out, and a proj for the pooled residual last.
  const std::size_t b1 = 4 + std::size(block);
  CHECK(p[b1 + 2].name == root + "blocks.1.attn.qkv.weight");
  CHECK(p[b1 + 2].shape == std::vector<int>{576, 96});
  CHECK(p[b1 + 0].shape == std::vector<int>{96});       // layer_norm1 of the input's width
  CHECK(p[b1 + 6].shape == std::vector<int>{192});      // layer_norm2 of the output's
  CHECK(p[b1 + 8].shape == std::vector<int>{768, 192});  // mlp.proj_in
  CHECK(p[b1 + 12].name == root + "blocks.1.proj.weight");
  CHECK(p[b1 + 12].shape == std::vector<int>{192, 96});
  CHECK(p[b1 + 14].name == root + "blocks.2.layer_norm1.weight");
  // The head follows the last block (11), for 768 channels.
  const long head = net.store().find_parameter("head.deconv0.weight");
  REQUIRE(head > 0);
  CHECK(p[std::size_t(head) - 1].name == root + "blocks.11.mlp.proj_out.bias");
  CHECK(p[std::size_t(head)].shape[0] == 192);  // PixelShuffle(2) of 768 channels
  // Hugging Face's Sam2Model file: the encoder under vision_encoder.backbone., the FPN
  // neck beside it is not the backbone's.
  CHECK(model::backbone_tensor_name("vision_encoder.backbone.blocks.3.attn.qkv.weight") ==
        root + "blocks.3.attn.qkv.weight");
  CHECK(model::backbone_tensor_name("vision_encoder.neck.convs.0.weight").empty());
  CHECK(model::backbone_tensor_name("vision_encoder.neck.conv1.weight") == root + "neck.conv1.weight");  // SAM's
  CHECK(model::backbone_tensor_name("mask_decoder.transformer.layers.0.mlp.proj_in.weight").empty());
  // The context model takes it too.
  const auto mhcrnn = model::make_pose_model(*b, "heatmap_mhcrnn", model::ModelSpec{"vitt_sam2", 2, 2, {64, 96}});
  CHECK(mhcrnn->store().parameters()[0].name == root + "pos_embed");
}

TEST_CASE("vitt_sam2 trains a CPU step through pooled and padded windows: every tensor gets a gradient",
          "[model][sam2]") {
  // 64 x 96: a 16 x 24 grid (2 x 3 windows of 8), then 8 x 12 (windows of 4), 4 x 6 (one
  // zero-padded window of 14 across), 2 x 3 (a padded window of 7).
  test_shared::ModelStep step(model_test::cpu(), "vitt_sam2", {}, {64, 96});
  const compute::Shape4 in{2, 3, 64, 96};
  step.run(model_test::random_vector(in.numel(), 6), in, model_test::random_vector(2 * 3 * 16 * 24, 7, 1e-2f));
  REQUIRE(step.heatmaps.size() == std::size_t(2 * 3 * 16 * 24));
  double plane = 0;
  for (int i = 0; i < 16 * 24; ++i) plane += step.heatmaps[std::size_t(i)];
  CHECK(plane == Approx(1.0).epsilon(1e-5));
  for (const auto& e : step.net.store().parameters()) {
    INFO(e.name);
    const auto g = step.grad(e);
    bool finite = true, nonzero = false;
    for (float v : g) finite = finite && std::isfinite(v), nonzero = nonzero || v != 0.f;
    CHECK(finite);
    // pos_embed and pos_embed_window start at zero and still get a gradient.
    CHECK(nonzero);
  }
  // The key third of a qkv bias has a zero gradient (softmax ignores a shift of a
  // query's scores), pooled queries or not; the query and value thirds do not.
  for (const char* block : {"blocks.0", "blocks.1", "blocks.10"}) {
    INFO(block);
    const long qkv = step.net.store().find_parameter(std::string("backbone.vision_encoder.") + block + ".attn.qkv.bias");
    REQUIRE(qkv >= 0);
    const auto g = step.grad(step.net.store().parameters()[std::size_t(qkv)]);
    const std::size_t third = g.size() / 3;
    double query = 0, key = 0, value = 0;
    for (std::size_t i = 0; i < third; ++i)
      query += std::fabs(g[i]), key += std::fabs(g[third + i]), value += std::fabs(g[2 * third + i]);
    CHECK(query > 0);
    CHECK(value > 0);
    CHECK(key < 1e-5 * (query + value));
  }
  // Sizes that are not multiples of the stride are the user's to fix.
  compute::DeviceBuffer x(*step.backend, std::size_t(3) * 48 * 64);
  model::Context ctx{*step.backend, step.backend->default_stream(), true, nullptr, nullptr};
  CHECK_THROWS_AS(step.net.forward(ctx, {x.data(), compute::Shape4{1, 3, 48, 64}}), UserError);
}

TEST_CASE("vitt_sam2's gradients match finite differences through pooling, windows and the position tables",
          "[model][sam2]") {
  // 64 x 64 with trained-looking scales: every parameter moved off its initial value,
  // so the tables (zero at init) and the biases matter.
  test_shared::ModelStep step(model_test::cpu(), "vitt_sam2", {}, {64, 64});
  auto& store = step.net.store();
  auto& s = step.backend->default_stream();
  for (std::size_t i = 0; i < store.parameters().size(); ++i) {
    auto v = store.download_param(i, s);
    const auto noise = model_test::random_vector(v.size(), 100 + std::uint32_t(i), 0.05f);
    for (std::size_t j = 0; j < v.size(); ++j) v[j] += noise[j];
    store.upload_param(i, v, s);
  }
  const compute::Shape4 in{1, 3, 64, 64};
  const auto images = model_test::random_vector(in.numel(), 8);
  const auto dy = model_test::random_vector(std::size_t(3) * 16 * 16, 9);
  const auto objective = [&] {  // what the backward of dy differentiates: <heatmaps, dy>
    step.run(images, in, dy);
    double f = 0;
    for (std::size_t i = 0; i < dy.size(); ++i) f += double(step.heatmaps[i]) * dy[i];
    return f;
  };
  objective();
  const std::vector<float> grads = step.grads;
  // Along each tensor's own gradient g: (f(p + e g/|g|) - f(p - e g/|g|)) / 2e = |g|.
  for (const char* name : {"pos_embed", "pos_embed_window", "patch_embed.projection.weight", "blocks.0.attn.qkv.bias",
                           "blocks.1.attn.qkv.weight", "blocks.1.proj.weight", "blocks.3.attn.qkv.bias",
                           "blocks.5.attn.qkv.weight", "blocks.10.attn.qkv.bias", "blocks.10.proj.bias",
                           "blocks.11.mlp.proj_in.weight"}) {
    INFO(name);
    const long index = store.find_parameter(std::string("backbone.vision_encoder.") + name);
    REQUIRE(index >= 0);
    const auto& entry = store.parameters()[std::size_t(index)];
    const std::vector<float> g(grads.begin() + long(entry.offset), grads.begin() + long(entry.offset + entry.count));
    double norm = 0;
    for (float v : g) norm += double(v) * v;
    norm = std::sqrt(norm);
    REQUIRE(norm > 0);
    const std::vector<float> original = store.download_param(std::size_t(index), s);
    const double eps = 3e-3;
    const auto moved = [&](double sign) {
      std::vector<float> v = original;
      for (std::size_t j = 0; j < v.size(); ++j) v[j] += float(sign * eps * g[j] / norm);
      store.upload_param(std::size_t(index), v, s);
      return objective();
    };
    const double slope = (moved(1) - moved(-1)) / (2 * eps);
    store.upload_param(std::size_t(index), original, s);
    CHECK(slope == Approx(norm).epsilon(2e-2));
  }
}

TEST_CASE("vitt_sam2 at bf16-mixed on the CPU: the step with 16-bit activation copies is the step without",
          "[model][sam2][autocast]") {
  // The copies hold the bits each autocast product would round its operand to, so the
  // products read the same values either way.
  const auto setup = [](bool copies) {
    return [copies](compute::Backend& b) {
      b.set_activation_storage(compute::Storage::f32_nchw);
      b.transformer_ops().set_activation_copies(copies);
    };
  };
  test_shared::ModelStep with(compute::make_cpu_backend(2, compute::Precision::bf16), "vitt_sam2", setup(true),
                              {64, 64}),
      without(compute::make_cpu_backend(2, compute::Precision::bf16), "vitt_sam2", setup(false), {64, 64});
  REQUIRE(with.backend->transformer_ops().activation_copies());
  REQUIRE_FALSE(without.backend->transformer_ops().activation_copies());
  const compute::Shape4 in{2, 3, 64, 64};
  const auto images = model_test::random_vector(in.numel(), 3);
  const auto dy = model_test::random_vector(std::size_t(2) * 3 * 16 * 16, 4, 1e-2f);
  with.run(images, in, dy);
  without.run(images, in, dy);
  CHECK(with.heatmaps == without.heatmaps);
  CHECK(with.grads == without.grads);
}
