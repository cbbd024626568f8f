// The ViT backbones (model/vit.hpp): Hugging Face's names, shapes and order, the
// bicubic position-embedding resize, the stride-16 head, a CPU training step, and the
// inputs it refuses. Gradients against PyTorch: tests/integration/parity_vit.sh.
#include <catch2/catch.hpp>

#include <cmath>    // std::isfinite, std::cos, std::sin, std::pow, M_PI
#include <cstring>  // std::memcpy
#include <iterator>  // std::size
#include <set>      // std::set
#include <vector>   // std::vector

#include "compute/backend.hpp"
#include "compute/losses/heatmap_mse.hpp"  // heatmap_mse_loss
#include "model/bicubic_resize.hpp"
#include "model/heatmap_model.hpp"
#include "model/lightning_pose_names.hpp"
#include "model/make_model.hpp"
#include "model/backbone_registry.hpp"  // backbone_tensor_name
#include "model/rope_tables.hpp"
#include "model/vit.hpp"  // resize_patch_embedding
#include "../../shared/model_step.hpp"  // test_shared::ModelStep
#include "model_test_util.hpp"
#include "util/error.hpp"

using namespace trainer;

TEST_CASE("vits_dino registers Hugging Face's ViTModel tensors under lightning-pose's names", "[model][vit]") {
  auto b = model_test::cpu();
  model::HeatmapModel net(*b, model::ModelSpec{"vits_dino", 3, 2});
  const auto& p = net.store().parameters();
  // transformers' ViTModel(add_pooling_layer=False) for facebook/dino-vits16: 21,665,664.
  CHECK(net.store().group_range(model::ParamGroup::backbone).count == 21665664);
  REQUIRE(p.size() >= 4 + 12 * 16 + 2);
  const std::string root = "backbone.vision_encoder.";
  CHECK(p[0].name == root + "embeddings.cls_token");
  CHECK(p[0].shape == std::vector<int>{1, 1, 384});
  CHECK(p[1].name == root + "embeddings.position_embeddings");
  CHECK(p[1].shape == std::vector<int>{1, 197, 384});
  CHECK(p[2].name == root + "embeddings.patch_embeddings.projection.weight");
  CHECK(p[2].shape == std::vector<int>{384, 3, 16, 16});
  CHECK(p[4].name == root + "encoder.layer.0.attention.attention.query.weight");
  CHECK(p[12].name == root + "encoder.layer.0.intermediate.dense.weight");
  CHECK(p[12].shape == std::vector<int>{1536, 384});
  CHECK(p[19].name == root + "encoder.layer.0.layernorm_after.bias");
  CHECK(p[4 + 12 * 16].name == root + "layernorm.weight");
  // The head undoes stride 16: PixelShuffle(2) + one deconvolution at d = 2.
  CHECK(p[4 + 12 * 16 + 2].name == "head.deconv0.weight");
  CHECK(p[4 + 12 * 16 + 2].shape == std::vector<int>{96, 3, 3, 3});
  CHECK(p.size() == 4 + 12 * 16 + 2 + 2);
}

TEST_CASE("vits_dinov2 registers Dinov2Model's tensors, its patch kernel at 16x16", "[model][vit]") {
  auto b = model_test::cpu();
  model::HeatmapModel net(*b, model::ModelSpec{"vits_dinov2", 3, 2});
  const auto& p = net.store().parameters();
  // transformers' Dinov2Model for facebook/dinov2-small, with the kernel lightning-pose
  // resizes from 14x14 to 16x16: 22,125,696 (22,056,576 at 14x14, transformers' count).
  CHECK(net.store().group_range(model::ParamGroup::backbone).count == 22125696);
  const std::string root = "backbone.vision_encoder.";
  CHECK(p[1].name == root + "embeddings.mask_token");
  CHECK(p[2].name == root + "embeddings.position_embeddings");
  CHECK(p[2].shape == std::vector<int>{1, 1370, 384});  // 37 x 37 + CLS
  CHECK(p[3].shape == std::vector<int>{384, 3, 16, 16});
  const std::string layer = root + "encoder.layer.0.";
  const char* order[] = {"norm1.weight", "norm1.bias", "attention.attention.query.weight",
                         "attention.attention.query.bias", "attention.attention.key.weight",
                         "attention.attention.key.bias", "attention.attention.value.weight",
                         "attention.attention.value.bias", "attention.output.dense.weight",
                         "attention.output.dense.bias", "layer_scale1.lambda1", "norm2.weight", "norm2.bias",
                         "mlp.fc1.weight", "mlp.fc1.bias", "mlp.fc2.weight", "mlp.fc2.bias", "layer_scale2.lambda1"};
  for (std::size_t i = 0; i < std::size(order); ++i) CHECK(p[5 + i].name == layer + order[i]);
  CHECK(p[5 + 12 * 18].name == root + "layernorm.weight");
}

TEST_CASE("vits_dinov3 registers DINOv3ViTModel's tensors: registers, no position embeddings, no key bias",
          "[model][vit]") {
  auto b = model_test::cpu();
  model::HeatmapModel net(*b, model::ModelSpec{"vits_dinov3", 3, 2});
  const auto& p = net.store().parameters();
  // transformers' DINOv3ViTModel for facebook/dinov3-vits16-pretrain-lvd1689m:
  // 297,600 embedding + 12 x 1,774,848 layer + 768 final norm parameters.
  CHECK(net.store().group_range(model::ParamGroup::backbone).count == 21596544);
  const std::string root = "backbone.vision_encoder.";
  REQUIRE(p.size() >= 5 + 12 * 17 + 2);
  CHECK(p[0].name == root + "embeddings.cls_token");
  CHECK(p[1].name == root + "embeddings.mask_token");
  CHECK(p[1].shape == std::vector<int>{1, 1, 384});
  CHECK(p[2].name == root + "embeddings.register_tokens");
  CHECK(p[2].shape == std::vector<int>{1, 4, 384});
  CHECK(p[3].name == root + "embeddings.patch_embeddings.weight");
  CHECK(p[3].shape == std::vector<int>{384, 3, 16, 16});
  CHECK(p[4].name == root + "embeddings.patch_embeddings.bias");
  const std::string layer = root + "layer.0.";
  const char* order[] = {"norm1.weight",          "norm1.bias",           "attention.k_proj.weight",
                         "attention.v_proj.weight", "attention.v_proj.bias", "attention.q_proj.weight",
                         "attention.q_proj.bias", "attention.o_proj.weight", "attention.o_proj.bias",
                         "layer_scale1.lambda1",  "norm2.weight",         "norm2.bias",
                         "mlp.up_proj.weight",    "mlp.up_proj.bias",     "mlp.down_proj.weight",
                         "mlp.down_proj.bias",    "layer_scale2.lambda1"};
  for (std::size_t i = 0; i < std::size(order); ++i) CHECK(p[5 + i].name == layer + order[i]);
  CHECK(p[5 + 12 * 17].name == root + "norm.weight");
  CHECK(p[5 + 12 * 17 + 2].name == "head.deconv0.weight");
  // Hugging Face's safetensors keys map onto these names, as lightning-pose's do.
  CHECK(model::backbone_tensor_name("layer.3.attention.k_proj.weight") == root + "layer.3.attention.k_proj.weight");
  CHECK(model::backbone_tensor_name("norm.bias") == root + "norm.bias");
  CHECK(model::backbone_tensor_name("embeddings.register_tokens") == root + "embeddings.register_tokens");
}

TEST_CASE("vitb_dinov3 is ViT-B; vitb_imagenet is MAE's encoder as a ViTModel, vitb_dino's tensors",
          "[model][vit]") {
  auto b = model_test::cpu();
  model::HeatmapModel v3(*b, model::ModelSpec{"vitb_dinov3", 3, 2});
  CHECK(v3.store().parameters()[0].shape == std::vector<int>{1, 1, 768});
  CHECK(model::vit_spec("vitb_dinov3").hidden == 768);
  model::HeatmapModel mae(*b, model::ModelSpec{"vitb_imagenet", 3, 2});
  model::HeatmapModel dino(*b, model::ModelSpec{"vitb_dino", 3, 2});
  CHECK(mae.store().group_range(model::ParamGroup::backbone).count == 85798656);  // transformers' ViTModel, ViT-B
  REQUIRE(mae.store().parameters().size() == dino.store().parameters().size());
  for (std::size_t i = 0; i < mae.store().parameters().size(); ++i) {
    CHECK(mae.store().parameters()[i].name == dino.store().parameters()[i].name);
    CHECK(mae.store().parameters()[i].shape == dino.store().parameters()[i].shape);
  }
  // ViTMAEForPreTraining's file: vit.* is the encoder, decoder.* is not the backbone's.
  CHECK(model::backbone_tensor_name("vit.encoder.layer.0.output.dense.bias") ==
        "backbone.vision_encoder.encoder.layer.0.output.dense.bias");
  CHECK(model::backbone_tensor_name("decoder.decoder_layers.0.output.dense.bias").empty());
  // lightning-pose's own MAE checkpoints (backbone_checkpoint) hold vit_mae.vit.*.
  CHECK(model::backbone_tensor_name("vit_mae.vit.embeddings.cls_token") == "backbone.vision_encoder.embeddings.cls_token");
  CHECK(model::backbone_tensor_name("vit_mae.decoder.decoder_norm.weight").empty());
  CHECK(model::vit_spec("vitb_imagenet").model_id == "facebook/vit-mae-base");
  CHECK(model::vit_spec("vits_dinov3").model_id == "facebook/dinov3-vits16-pretrain-lvd1689m");
  CHECK(model::vit_spec("vitb_dinov3").model_id == "facebook/dinov3-vitb16-pretrain-lvd1689m");
}

TEST_CASE("DINOv3's RoPE tables: patch centres in [-1, 1] per axis, theta 100", "[model][vit]") {
  const int h = 3, w = 5, D = 8;
  const auto t = model::rope_tables(h, w, D, 100.f);
  REQUIRE(t.cos.size() == std::size_t(h * w * D / 2));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int i = 0; i < D / 2; ++i) {
        const double c = i < D / 4 ? 2.0 * (y + 0.5) / h - 1.0 : 2.0 * (x + 0.5) / w - 1.0;
        const double angle = 2.0 * M_PI * c / std::pow(100.0, 4.0 * (i % (D / 4)) / D);
        const std::size_t at = std::size_t((y * w + x) * (D / 2) + i);
        INFO(y << "," << x << " " << i);
        CHECK(t.cos[at] == Approx(std::cos(angle)).margin(2e-6));
        CHECK(t.sin[at] == Approx(std::sin(angle)).margin(2e-6));
      }
  // The centre patch of an odd grid sits at 0 on that axis: angle 0.
  CHECK(t.sin[std::size_t((1 * w + 2) * (D / 2))] == 0.f);
  CHECK_THROWS(model::rope_tables(2, 2, 6, 100.f));
  // PyTorch 1.13's float32 tables (tests/parity/vit_parity.py's rope_tables, transformers'
  // formula) for a 3 x 5 grid and head width 64, at (patch, element) samples.
  const auto v = model::rope_tables(3, 5, 64, 100.f);
  struct Sample {
    int patch, i;
    float cos, sin;
  };
  const Sample torch[] = {{0, 0, -0.5000002980232239f, 0.8660252094268799f},
                          {0, 5, 0.5459124445915222f, -0.8378422260284424f},
                          {7, 15, 1.f, 0.f},
                          {14, 31, 0.9977543354034424f, 0.06697990745306015f},
                          {4, 20, -0.018736621364951134f, 0.9998244643211365f}};
  for (const auto& t : torch) {
    INFO(t.patch << ", " << t.i);
    CHECK(v.cos[std::size_t(t.patch * 32 + t.i)] == Approx(t.cos).margin(2e-7));
    CHECK(v.sin[std::size_t(t.patch * 32 + t.i)] == Approx(t.sin).margin(2e-7));
  }
}

TEST_CASE("DINOv2's 14x14 patch kernels become 16x16 as lightning-pose resizes them", "[model][vit]") {
  // PyTorch 1.13: F.interpolate(eye(14) rows, size=16, mode="bicubic", align_corners=True,
  // antialias=True): output 0 = 1.0302 x0 - 0.0302 x1; output 1 = 0.1654, 0.8976, -0.0630.
  const auto m = model::antialiased_bicubic_resize_matrix(14, 16, true);
  CHECK(m[0] == Approx(1.0302).margin(1e-4));
  CHECK(m[1] == Approx(-0.0302).margin(1e-4));
  CHECK(m[2] == 0.0);
  CHECK(m[14] == Approx(0.16535).margin(1e-4));
  CHECK(m[15] == Approx(0.89764).margin(1e-4));
  CHECK(m[16] == Approx(-0.06299).margin(1e-4));
  // A constant kernel stays constant; the shape becomes the model's.
  StoredTensor t;
  t.name = "embeddings.patch_embeddings.projection.weight";
  t.shape = {2, 3, 14, 14};
  const std::vector<float> ones(2 * 3 * 14 * 14, 0.5f);
  t.bytes.assign(reinterpret_cast<const char*>(ones.data()), ones.size() * sizeof(float));
  const StoredTensor r = model::resize_patch_embedding(t, 16);
  CHECK(r.shape == std::vector<std::int64_t>{2, 3, 16, 16});
  REQUIRE(r.bytes.size() == 2 * 3 * 16 * 16 * sizeof(float));
  std::vector<float> v(2 * 3 * 16 * 16);
  std::memcpy(v.data(), r.bytes.data(), r.bytes.size());
  for (float x : v) CHECK(x == Approx(0.5f).epsilon(1e-6));
}

TEST_CASE("the bicubic resize matrix is PyTorch's", "[model][vit]") {
  // Same size: the identity (Hugging Face then skips the resize; same result).
  const auto same = model::bicubic_resize_matrix(5, 5);
  for (int o = 0; o < 5; ++o)
    for (int i = 0; i < 5; ++i) CHECK(same[o * 5 + i] == Approx(o == i ? 1.0 : 0.0).margin(1e-15));
  // 2 -> 4 (scale 0.5): output 0 sits at -0.25, the taps at -2..1 clamp to the edges.
  // PyTorch 1.13: F.interpolate(torch.tensor([[[[1., 0.]]]]), size=(1, 4), mode="bicubic")
  // = [1.10546875, 0.7734375, 0.2265625, -0.10546875] (exact binary fractions).
  const auto up = model::bicubic_resize_matrix(2, 4);
  CHECK(up[0] == Approx(1.10546875).epsilon(1e-12));
  CHECK(up[2] == Approx(0.7734375).epsilon(1e-12));
  CHECK(up[4] == Approx(0.2265625).epsilon(1e-12));
  CHECK(up[6] == Approx(-0.10546875).epsilon(1e-12));
  // Every row sums to 1 (a constant stays constant), down as up, and in 2-D.
  for (auto [in, out] : {std::pair<int, int>{14, 16}, {14, 4}, {14, 37}}) {
    const auto m = model::bicubic_resize_matrix(in, out);
    for (int o = 0; o < out; ++o) {
      double sum = 0;
      for (int i = 0; i < in; ++i) sum += m[o * in + i];
      CHECK(sum == Approx(1.0).epsilon(1e-12));
    }
  }
  const auto m2 = model::bicubic_resize_matrix_2d(14, 14, 4, 6);
  REQUIRE(m2.size() == std::size_t(24) * 196);
  double sum = 0;
  for (int i = 0; i < 196; ++i) sum += m2[7 * 196 + i];
  CHECK(sum == Approx(1.0).epsilon(1e-6));
}

namespace {

// Whether every value of a tensor's gradient is finite, and whether any is not zero.
struct GradientSeen {
  bool finite = true, nonzero = false;
};
GradientSeen seen(const std::vector<float>& grad) {
  GradientSeen g;
  for (float v : grad) g.finite = g.finite && std::isfinite(v), g.nonzero = g.nonzero || v != 0.f;
  return g;
}

}  // namespace

TEST_CASE("vits_dino trains a CPU step; features are the stride-16 patch grid", "[model][vit]") {
  test_shared::ModelStep step(model_test::cpu(), "vits_dino");
  const compute::Shape4 in{2, 3, 48, 80};  // not square: a 3 x 5 patch grid
  step.run(model_test::random_vector(in.numel(), 6), in, model_test::random_vector(2 * 3 * 12 * 20, 7, 1e-2f));
  REQUIRE(step.heatmaps.size() == std::size_t(2 * 3 * 12 * 20));  // heatmaps at input / 2^d
  double plane = 0;
  for (int i = 0; i < 12 * 20; ++i) plane += step.heatmaps[std::size_t(i)];
  CHECK(plane == Approx(1.0).epsilon(1e-5));
  // Backward reaches every backbone tensor (the position embeddings through the resize).
  for (const auto& e : step.net.store().parameters()) {
    INFO(e.name);
    const GradientSeen g = seen(step.grad(e));
    CHECK(g.finite);
    // A key bias's gradient is exactly zero (softmax ignores a shift of a query's scores).
    if (e.name.find("attention.key.bias") == std::string::npos) CHECK(g.nonzero);
  }
  // An input that is not a multiple of the patch size is the user's to fix.
  compute::DeviceBuffer x(*step.backend, std::size_t(3) * 40 * 40);
  model::Context ctx{*step.backend, step.backend->default_stream(), true, nullptr, nullptr};
  CHECK_THROWS_AS(step.net.forward(ctx, {x.data(), compute::Shape4{1, 3, 40, 40}}), UserError);
}

TEST_CASE("vitb_sam registers SamVisionEncoder's tensors, its position table at the image's grid",
          "[model][vit][sam]") {
  auto b = model_test::cpu();
  {  // Built as facebook/sam-vit-base's SamVisionEncoder (1024 x 1024): 89,670,912 elements.
    model::ParameterStore native(*b);  // names and shapes only: nothing allocated
    model::make_backbone("vitb_sam", native, "backbone.");
    std::size_t count = 0;
    for (const auto& e : native.parameters()) count += e.count;
    CHECK(count == 89670912);
  }
  model::HeatmapModel net(*b, model::ModelSpec{"vitb_sam", 3, 2, {256, 384}});
  const auto& p = net.store().parameters();
  const std::string root = "backbone.vision_encoder.";
  CHECK(net.store().group_range(model::ParamGroup::backbone).count == 89670912 - 64 * 64 * 768 + 16 * 24 * 768);
  CHECK(p[0].name == root + "pos_embed");
  CHECK(p[0].shape == std::vector<int>{1, 16, 24, 768});
  CHECK(p[1].name == root + "patch_embed.projection.weight");
  CHECK(p[2].name == root + "patch_embed.projection.bias");
  // Each layer: layer_norm1, attn.rel_pos_h/_w, attn.qkv, attn.proj, layer_norm2, mlp.lin1/lin2.
  const char* layer0[] = {"layer_norm1.weight", "layer_norm1.bias", "attn.rel_pos_h", "attn.rel_pos_w",
                          "attn.qkv.weight",    "attn.qkv.bias",    "attn.proj.weight", "attn.proj.bias",
                          "layer_norm2.weight", "layer_norm2.bias", "mlp.lin1.weight", "mlp.lin1.bias",
                          "mlp.lin2.weight",    "mlp.lin2.bias"};
  for (std::size_t i = 0; i < std::size(layer0); ++i) CHECK(p[3 + i].name == root + "layers.0." + layer0[i]);
  CHECK(p[3 + 4].shape == std::vector<int>{2304, 768});
  CHECK(p[3 + 2].shape == std::vector<int>{27, 64});  // a windowed layer's: 2 * 14 - 1
  CHECK(p[3 + 2 * 14 + 2].name == root + "layers.2.attn.rel_pos_h");
  CHECK(p[3 + 2 * 14 + 2].shape == std::vector<int>{127, 64});  // a global layer's: 2 * 64 - 1
  CHECK(p[3 + 12 * 14].name == root + "neck.conv1.weight");
  CHECK(p[3 + 12 * 14 + 5].name == root + "neck.layer_norm2.bias");
  CHECK(p[3 + 12 * 14 + 6].name == "head.deconv0.weight");
  CHECK(p[3 + 12 * 14 + 6].shape == std::vector<int>{192, 3, 3, 3});  // PixelShuffle(2) of 768 channels
  // A size the 16x16 patches do not tile is the user's to fix.
  model::ParameterStore unused(*b);
  CHECK_THROWS_AS(model::make_backbone("vitb_sam", unused, "backbone.", {250, 256}), UserError);
  // The context model builds its backbone for the image size too.
  model::ParameterStore context(*b);
  const auto backbone = model::make_backbone("vitb_sam", context, "backbone.", {64, 96});
  CHECK(context.parameters()[0].shape == std::vector<int>{1, 4, 6, 768});
  const auto mhcrnn = model::make_pose_model(*b, "heatmap_mhcrnn", model::ModelSpec{"vitb_sam", 2, 2, {64, 96}});
  CHECK(mhcrnn->store().parameters()[0].shape == std::vector<int>{1, 4, 6, 768});
}

TEST_CASE("vitb_sam's qkv bias gradient matches finite differences, the windows' padding included",
          "[model][vit][sam]") {
  // 48 x 80: 15 tokens in each 196-row window, so the value bias reaches the loss mostly
  // through the padding rows, which hold the biases themselves.
  test_shared::ModelStep step(model_test::cpu(), "vitb_sam", {}, {48, 80});
  const compute::Shape4 in{1, 3, 48, 80};
  const auto images = model_test::random_vector(in.numel(), 8);
  const auto dy = model_test::random_vector(std::size_t(3) * 12 * 20, 9);
  const auto objective = [&] {  // what the backward of dy differentiates: <heatmaps, dy>
    step.run(images, in, dy);
    double f = 0;
    for (std::size_t i = 0; i < dy.size(); ++i) f += double(step.heatmaps[i]) * dy[i];
    return f;
  };
  objective();
  auto& store = step.net.store();
  auto& s = step.backend->default_stream();
  for (const int layer : {0, 2}) {  // a windowed layer and a global one
    const long index = store.find_parameter("backbone.vision_encoder.layers." + std::to_string(layer) + ".attn.qkv.bias");
    REQUIRE(index >= 0);
    const auto& entry = store.parameters()[std::size_t(index)];
    const std::vector<float> grad = step.grad(entry);
    const std::vector<float> original = store.download_param(std::size_t(index), s);
    for (const int third : {0, 2}) {  // query, value
      int j = third * 768;
      for (int i = third * 768; i < (third + 1) * 768; ++i)
        if (std::fabs(grad[std::size_t(i)]) > std::fabs(grad[std::size_t(j)])) j = i;
      const double eps = 0.25;  // the gradients are ~1e-6 at this init: a small step drowns in float32 rounding
      std::vector<float> moved = original;
      moved[std::size_t(j)] = original[std::size_t(j)] + float(eps);
      store.upload_param(std::size_t(index), moved, s);
      const double up = objective();
      moved[std::size_t(j)] = original[std::size_t(j)] - float(eps);
      store.upload_param(std::size_t(index), moved, s);
      const double down = objective();
      store.upload_param(std::size_t(index), original, s);
      INFO("layer " << layer << " bias element " << j << ": analytic " << grad[std::size_t(j)]);
      CHECK((up - down) / (2 * eps) == Approx(grad[std::size_t(j)]).epsilon(2e-2));
    }
  }
}

TEST_CASE("vitb_sam trains a CPU step through windows and padding; the unused tensors get no gradient",
          "[model][vit][sam]") {
  // 48 x 80: a 3 x 5 grid, one zero-padded 14 x 14 window per image in the windowed layers.
  test_shared::ModelStep step(model_test::cpu(), "vitb_sam", {}, {48, 80});
  const compute::Shape4 in{2, 3, 48, 80};
  step.run(model_test::random_vector(in.numel(), 6), in, model_test::random_vector(2 * 3 * 12 * 20, 7, 1e-2f));
  REQUIRE(step.heatmaps.size() == std::size_t(2 * 3 * 12 * 20));
  double plane = 0;
  for (int i = 0; i < 12 * 20; ++i) plane += step.heatmaps[std::size_t(i)];
  CHECK(plane == Approx(1.0).epsilon(1e-5));
  for (const auto& e : step.net.store().parameters()) {
    INFO(e.name);
    const GradientSeen g = seen(step.grad(e));
    CHECK(g.finite);
    const bool unused = e.name.find("rel_pos") != std::string::npos || e.name.find(".neck.") != std::string::npos;
    CHECK(g.nonzero == !unused);
  }
  // The key third of every qkv bias has a zero gradient (softmax ignores a shift of a
  // query's scores); the query and value thirds do not.
  const long qkv = step.net.store().find_parameter("backbone.vision_encoder.layers.0.attn.qkv.bias");
  REQUIRE(qkv >= 0);
  const auto g = step.grad(step.net.store().parameters()[std::size_t(qkv)]);
  double query = 0, key = 0, value = 0;
  for (int i = 0; i < 768; ++i) query += std::fabs(g[std::size_t(i)]), key += std::fabs(g[std::size_t(768 + i)]),
                                value += std::fabs(g[std::size_t(1536 + i)]);
  CHECK(query > 0);
  CHECK(value > 0);
  CHECK(key < 1e-6 * (query + value));
  // Its position table is for 48 x 80 images: another size is refused.
  compute::DeviceBuffer x(*step.backend, std::size_t(3) * 48 * 48);
  model::Context ctx{*step.backend, step.backend->default_stream(), true, nullptr, nullptr};
  CHECK_THROWS_AS(step.net.forward(ctx, {x.data(), compute::Shape4{1, 3, 48, 48}}), UserError);
}

TEST_CASE("SAM's position table is resized as lightning-pose does, separably, taps summing to 1",
          "[model][vit][sam]") {
  // [1, 4, 6, 2]: channel 0 constant (a resize keeps it), channel 1 varying.
  StoredTensor t;
  t.name = "vision_encoder.pos_embed";
  t.type = StoredType::f32;
  t.shape = {1, 4, 6, 2};
  std::vector<float> v(48);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 6; ++x) v[std::size_t((y * 6 + x) * 2)] = 0.25f, v[std::size_t((y * 6 + x) * 2 + 1)] = float(y * 6 + x);
  t.bytes.assign(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  CHECK(model::resize_position_table(t, {1, 4, 6, 2}).bytes == t.bytes);  // already the grid's
  const StoredTensor r = model::resize_position_table(t, {1, 2, 3, 2});
  REQUIRE(r.shape == std::vector<std::int64_t>{1, 2, 3, 2});
  std::vector<float> out(12);
  std::memcpy(out.data(), r.bytes.data(), r.bytes.size());
  const auto mh = model::antialiased_bicubic_resize_matrix(4, 2, false);
  const auto mw = model::antialiased_bicubic_resize_matrix(6, 3, false);
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 3; ++x) {
      CHECK(out[std::size_t((y * 3 + x) * 2)] == Approx(0.25).epsilon(1e-6));
      double want = 0;
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 6; ++j) want += mh[std::size_t(y * 4 + i)] * mw[std::size_t(x * 6 + j)] * (i * 6 + j);
      CHECK(out[std::size_t((y * 3 + x) * 2 + 1)] == Approx(want).epsilon(1e-6));
    }
  CHECK_THROWS_AS(model::resize_position_table(t, {1, 2, 3, 5}), UserError);  // another width
  // The taps against PyTorch's (F.interpolate(bicubic, antialias=True) of unit vectors, float64).
  const auto m64 = model::antialiased_bicubic_resize_matrix(64, 16, false);
  const double first[] = {0.1970899471, 0.2611111111, 0.2611111111, 0.1970899471,
                          0.1055555556, 0.0246031746, -0.012962963, -0.0198412698};
  for (int i = 0; i < 8; ++i) CHECK(m64[std::size_t(i)] == Approx(first[i]).margin(1e-9));
  const double four_to_two[] = {0.458677686, 0.458677686, 0.1198347107, -0.0371900826};
  for (int i = 0; i < 4; ++i) CHECK(mh[std::size_t(i)] == Approx(four_to_two[i]).margin(1e-9));
  const double six_to_three[] = {-0.034351145, 0.1106870229, 0.4236641221, 0.4236641221, 0.1106870229, -0.034351145};
  for (int i = 0; i < 6; ++i) CHECK(mw[std::size_t(6 + i)] == Approx(six_to_three[i]).margin(1e-9));
}

TEST_CASE("vits_dinov3 trains a CPU step: every tensor but mask_token gets a gradient", "[model][vit]") {
  test_shared::ModelStep step(model_test::cpu(), "vits_dinov3");
  const compute::Shape4 in{2, 3, 48, 80};  // a 3 x 5 patch grid after CLS + 4 registers
  step.run(model_test::random_vector(in.numel(), 6), in, model_test::random_vector(2 * 3 * 12 * 20, 7, 1e-2f));
  CHECK(step.heatmaps.size() == std::size_t(2 * 3 * 12 * 20));
  for (const auto& e : step.net.store().parameters()) {
    INFO(e.name);
    const GradientSeen g = seen(step.grad(e));
    CHECK(g.finite);
    CHECK(g.nonzero == (e.name.find("mask_token") == std::string::npos));  // unused, as in PyTorch
  }
}

TEST_CASE("ViT backbones: the stride-16 head limits d; the context model takes them", "[model][vit]") {
  auto b = model_test::cpu();
  try {
    model::HeatmapModel net(*b, model::ModelSpec{"vits_dino", 2, 3});
    FAIL("no error");
  } catch (const UserError& e) {
    CHECK(std::string(e.what()) == "data.downsample_factor = 3 leaves no upsampling layer after a backbone of stride 16");
  }
  // The context model takes the ViTs since its head has lightning-pose's
  // upsampling_factor 1 (stride 16): no W_pre, W_f from the shuffled features.
  const auto context = model::make_pose_model(*b, "heatmap_mhcrnn", model::ModelSpec{"vits_dino", 2, 2});
  CHECK(context->store().find_parameter("head.head_mf.W_pre.weight") < 0);
  const long w_f = context->store().find_parameter("head.head_mf.W_f.weight");
  REQUIRE(w_f >= 0);
  CHECK(context->store().parameters()[std::size_t(w_f)].shape == std::vector<int>{384 / 4, 2, 3, 3});
}

TEST_CASE("vits_dino, vits_dinov3: lightning-pose's checkpoint names are ours, both ways", "[model][vit]") {
  const std::string name_of_backbone = GENERATE(as<std::string>{}, "vits_dino", "vits_dinov3", "vitb_sam");
  INFO(name_of_backbone);
  auto b = model_test::cpu();
  model::HeatmapModel net(*b, model::ModelSpec{name_of_backbone, 4, 1});
  std::set<std::string> seen;
  for (const auto& name : net.store().state_dict_names()) {
    const std::string lp = model::lightning_pose_state_name(name);
    INFO(name << " -> " << lp);
    CHECK(!lp.empty());
    CHECK(seen.insert(lp).second);
    CHECK(model::state_name_from_lightning_pose(lp) == name);
    if (name.rfind("backbone.", 0) == 0) CHECK(lp == name);  // VisionEncoder's vision_encoder.*
  }
}
