// lightning-pose's state_dict names for the heatmap model (model/lightning_pose_names.hpp):
// every tensor of every backbone maps to a distinct name and back. PyTorch checks
// that the names load into lightning-pose's module layout in
// tests/integration/lp_model_dir.sh.
#include <catch2/catch.hpp>

#include <set>     // std::set
#include <string>  // std::string
#include <vector>  // std::vector

#include "model/backbone_registry.hpp"  // backbone_tensor_name
#include "model/lightning_pose_names.hpp"
#include "model/make_model.hpp"  // make_pose_model
#include "model_test_util.hpp"

using trainer::model::HeatmapModel;
using trainer::model::lightning_pose_state_name;
using trainer::model::ModelSpec;
using trainer::model::state_name_from_lightning_pose;

TEST_CASE("lightning-pose names: the Sequential indices of the ResNet and the head", "[model]") {
  CHECK(lightning_pose_state_name("backbone.conv1.weight") == "backbone.0.weight");
  CHECK(lightning_pose_state_name("backbone.bn1.running_var") == "backbone.1.running_var");
  CHECK(lightning_pose_state_name("backbone.layer1.0.conv1.weight") == "backbone.4.0.conv1.weight");
  CHECK(lightning_pose_state_name("backbone.layer4.2.downsample.1.num_batches_tracked") ==
        "backbone.7.2.downsample.1.num_batches_tracked");
  CHECK(lightning_pose_state_name("head.deconv0.weight") == "head.upsampling_layers.1.weight");
  CHECK(lightning_pose_state_name("head.deconv2.bias") == "head.upsampling_layers.3.bias");
  CHECK(lightning_pose_state_name("head.head_sf.deconv0.weight") == "head.head_sf.upsampling_layers.1.weight");
  CHECK(lightning_pose_state_name("head.head_mf.H_b.1.bias") == "head.head_mf.H_b.1.bias");
  CHECK(lightning_pose_state_name("backbone.fc.weight").empty());
  CHECK(state_name_from_lightning_pose("backbone.5.1.bn2.weight") == "backbone.layer2.1.bn2.weight");
  CHECK(state_name_from_lightning_pose("head.upsampling_layers.0.weight").empty());  // the PixelShuffle has none
  CHECK(state_name_from_lightning_pose("backbone.8.weight").empty());
}

TEST_CASE("lightning-pose names: every tensor of every backbone, distinct and reversible", "[model]") {
  auto backend = model_test::cpu();
  for (const char* backbone : {"resnet18", "resnet34", "resnet50"}) {
    for (int downsample : {2, 3}) {
      HeatmapModel m(*backend, ModelSpec{backbone, 5, downsample});
      std::set<std::string> seen;
      for (const auto& name : m.store().state_dict_names()) {
        const std::string lp = lightning_pose_state_name(name);
        INFO(backbone << " " << name << " -> " << lp);
        CHECK(!lp.empty());
        CHECK(seen.insert(lp).second);
        CHECK(state_name_from_lightning_pose(lp) == name);
      }
      CHECK(seen.size() == m.store().state_dict_names().size());
    }
  }
}

TEST_CASE("lightning-pose names: the context model's heads, with UpsamplingCRNN's layers aliases", "[model]") {
  using trainer::model::lightning_pose_state_aliases;
  CHECK(lightning_pose_state_aliases("head.head_mf.W_pre.weight", true) ==
        std::vector<std::string>{"head.head_mf.layers.0.weight"});
  CHECK(lightning_pose_state_aliases("head.head_mf.H_f.1.bias", true) ==
        std::vector<std::string>{"head.head_mf.layers.2.1.bias"});
  CHECK(lightning_pose_state_aliases("head.head_mf.H_b.0.weight", true) ==
        std::vector<std::string>{"head.head_mf.layers.4.0.weight"});
  CHECK(lightning_pose_state_aliases("head.head_sf.deconv0.weight", true).empty());
  CHECK(lightning_pose_state_aliases("backbone.conv1.weight", true).empty());
  // The aliases repeat values: reading them back names no tensor of ours.
  CHECK(state_name_from_lightning_pose("head.head_mf.layers.1.weight").empty());
  CHECK(state_name_from_lightning_pose("head.head_sf.upsampling_layers.2.bias") == "head.head_sf.deconv1.bias");
  CHECK(state_name_from_lightning_pose("head.head_mf.W_b.bias") == "head.head_mf.W_b.bias");
  auto backend = model_test::cpu();
  const auto m = trainer::model::make_pose_model(*backend, "heatmap_mhcrnn", ModelSpec{"resnet18", 4, 2});
  std::set<std::string> seen;
  int aliases = 0;
  for (const auto& name : m->store().state_dict_names()) {
    const std::string lp = lightning_pose_state_name(name);
    INFO(name << " -> " << lp);
    CHECK(!lp.empty());
    CHECK(seen.insert(lp).second);
    CHECK(state_name_from_lightning_pose(lp) == name);
    for (const auto& alias : lightning_pose_state_aliases(name, true)) {
      CHECK(seen.insert(alias).second);
      ++aliases;
    }
  }
  CHECK(aliases == 14);  // W_pre, W_f, W_b: weight and bias; H_f, H_b: two convolutions each
  CHECK(trainer::model::crnn_has_w_pre(m->store().state_dict_names()));
}

TEST_CASE("lightning-pose names: a ViT's context head has no W_pre, so W_f is layers.0", "[model][vit]") {
  using trainer::model::lightning_pose_state_aliases;
  // lightning-pose's UpsamplingCRNN with upsampling_factor 1 (stride-16 backbones).
  CHECK(lightning_pose_state_aliases("head.head_mf.W_f.weight", false) ==
        std::vector<std::string>{"head.head_mf.layers.0.weight"});
  CHECK(lightning_pose_state_aliases("head.head_mf.H_f.1.bias", false) ==
        std::vector<std::string>{"head.head_mf.layers.1.1.bias"});
  CHECK(lightning_pose_state_aliases("head.head_mf.H_b.0.weight", false) ==
        std::vector<std::string>{"head.head_mf.layers.3.0.weight"});
  auto backend = model_test::cpu();
  const auto m = trainer::model::make_pose_model(*backend, "heatmap_mhcrnn", ModelSpec{"vits_dino", 4, 2});
  const auto names = m->store().state_dict_names();
  CHECK_FALSE(trainer::model::crnn_has_w_pre(names));
  std::set<std::string> seen;
  int aliases = 0;
  for (const auto& name : names) {
    const std::string lp = lightning_pose_state_name(name);
    INFO(name << " -> " << lp);
    CHECK(!lp.empty());
    CHECK(seen.insert(lp).second);
    CHECK(state_name_from_lightning_pose(lp) == name);
    for (const auto& alias : lightning_pose_state_aliases(name, false)) {
      CHECK(seen.insert(alias).second);
      ++aliases;
    }
  }
  CHECK(aliases == 12);  // W_f, W_b: weight and bias; H_f, H_b: two convolutions each
}

TEST_CASE("pretrained backbone files: lightning-pose's checkpoint names are read as ours", "[model]") {
  using trainer::model::backbone_tensor_name;
  CHECK(backbone_tensor_name("backbone.4.0.conv1.weight") == "backbone.layer1.0.conv1.weight");
  CHECK(backbone_tensor_name("backbone.1.num_batches_tracked") == "backbone.bn1.num_batches_tracked");
  CHECK(backbone_tensor_name("module.backbone.0.weight") == "backbone.conv1.weight");
  CHECK(backbone_tensor_name("backbone.conv1.weight") == "backbone.conv1.weight");  // mmpose, ours
  CHECK(backbone_tensor_name("layer2.1.bn1.bias") == "backbone.layer2.1.bn1.bias");  // torchvision
  CHECK(backbone_tensor_name("head.upsampling_layers.1.weight").empty());             // a head's
}
