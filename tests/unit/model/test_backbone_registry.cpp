// The backbone registry and the model-type list: the names they export, what the
// Backbone interface promises the heads (channels, stride, "backbone.*" names in
// the backbone group, forward shape), and the errors for unknown names.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "model/backbone_registry.hpp"
#include "model/make_model.hpp"
#include "model_test_util.hpp"
#include "util/error.hpp"

using namespace trainer;

TEST_CASE("the backbone registry lists ResNet-18/34/50, each once", "[model][backbone]") {
  const auto& names = model::backbone_names();
  CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());
  for (const char* resnet : {"resnet18", "resnet34", "resnet50"})
    CHECK(std::count(names.begin(), names.end(), resnet) == 1);
  CHECK(model::model_type_names() == std::vector<std::string>{"heatmap", "heatmap_mhcrnn"});
  CHECK_FALSE(model::needs_context_frames("heatmap"));
  CHECK(model::needs_context_frames("heatmap_mhcrnn"));
  CHECK_FALSE(model::needs_context_frames("nonsense"));
}

TEST_CASE("every registered backbone keeps the Backbone contract", "[model][backbone]") {
  auto b = model_test::cpu();
  for (const auto& name : model::backbone_names()) {
    INFO(name);
    model::ParameterStore store(*b);
    const auto backbone = model::make_backbone(name, store, "backbone.");
    CHECK(backbone->name() == name);
    // What the heads undo: lightning-pose's BACKBONE_STRIDES.
    const bool sam2 = name.size() > 5 && name.compare(name.size() - 5, 5, "_sam2") == 0;  // Hiera: 4 x 2^3
    CHECK(backbone->stride() == (name.rfind("vit", 0) == 0 && !sam2 ? 16 : 32));
    CHECK(backbone->out_channels() % 4 == 0);  // the heads' PixelShuffle(2) needs C/4 channels
    if (name == "resnet18" || name == "resnet34") CHECK(backbone->out_channels() == 512);
    else if (name.rfind("resnet", 0) == 0) CHECK(backbone->out_channels() == 2048);  // Bottleneck ResNets
    else if (name == "vits_dino") CHECK(backbone->out_channels() == 384);
    else if (name == "vitb_dino") CHECK(backbone->out_channels() == 768);
    REQUIRE_FALSE(store.parameters().empty());
    for (const auto& e : store.parameters()) {
      CHECK(e.name.rfind("backbone.", 0) == 0);
      CHECK(e.group == model::ParamGroup::backbone);
    }
    for (const auto& e : store.buffers()) CHECK(e.name.rfind("backbone.", 0) == 0);
  }
}

TEST_CASE("a backbone's forward through the interface downsamples by its stride", "[model][backbone]") {
  auto b = model_test::cpu();
  auto& s = b->default_stream();
  model::ParameterStore store(*b);
  const auto backbone = model::make_backbone("resnet18", store, "backbone.");
  store.allocate();
  store.initialize(3, s);
  const compute::Shape4 in{2, 3, 64, 96};
  const auto images = model_test::random_vector(in.numel(), 5);
  compute::DeviceBuffer x(*b, in.numel());
  b->upload(x.data(), images.data(), images.size(), s);
  model::Context ctx{*b, s, true, nullptr, nullptr};
  const auto y = backbone->forward(ctx, {x.data(), in});
  CHECK(y.shape == compute::Shape4{2, backbone->out_channels(), 64 / backbone->stride(), 96 / backbone->stride()});
  // An input that is not a multiple of the stride is the user's to fix.
  CHECK_THROWS_AS(backbone->forward(ctx, {x.data(), compute::Shape4{2, 3, 48, 64}}), UserError);
  s.synchronize();
}

TEST_CASE("unknown backbone and model type names are user errors listing the choices", "[model][backbone]") {
  auto b = model_test::cpu();
  model::ParameterStore store(*b);
  try {
    model::make_backbone("vit_h_sam", store, "backbone.");
    FAIL("no error");
  } catch (const UserError& e) {
    CHECK(std::string(e.what()) == "unknown backbone 'vit_h_sam'");
    std::string names;
    for (const auto& n : model::backbone_names()) names += (names.empty() ? "" : ", ") + n;
    CHECK(e.hint() == "model.backbone is one of: " + names);
  }
  // The registry is exact; the config reader folds case before it gets there.
  CHECK_THROWS_AS(model::make_backbone("ResNet18", store, "backbone."), UserError);
  try {
    model::make_pose_model(*b, "regression", model::ModelSpec{"resnet18", 3, 2});
    FAIL("no error");
  } catch (const UserError& e) {
    CHECK(std::string(e.what()) == "unknown model.model_type 'regression'");
    CHECK(e.hint() == "use heatmap or heatmap_mhcrnn");
  }
  // An unknown backbone stops either model type before anything is allocated.
  for (const auto& type : model::model_type_names())
    CHECK_THROWS_AS(model::make_pose_model(*b, type, model::ModelSpec{"vit_b", 3, 2}), UserError);
}
