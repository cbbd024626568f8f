// Parameter registration: torchvision state_dict names, PyTorch shapes, counts,
// contiguous groups, and the head's names. (The exact key lists are compared with
// torchvision itself in tests/integration/parity_model_keys.sh.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "model_test_util.hpp"
#include "util/error.hpp"

using trainer::model::HeatmapModel;
using trainer::model::ModelSpec;
using trainer::model::ParamGroup;

namespace {
std::size_t count_group(const trainer::model::ParameterStore& s, ParamGroup g) {
  std::size_t n = 0;
  for (const auto& e : s.parameters())
    if (e.group == g) n += e.count;
  return n;
}
}  // namespace

TEST_CASE("resnet18 registers torchvision's names and shapes", "[model]") {
  auto backend = model_test::cpu();
  HeatmapModel m(*backend, ModelSpec{"resnet18", 17, 2});
  const auto& store = m.store();
  const auto names = store.state_dict_names();
  REQUIRE(names.size() >= 5);
  CHECK(names[0] == "backbone.conv1.weight");
  CHECK(names[1] == "backbone.bn1.weight");
  CHECK(names[2] == "backbone.bn1.bias");
  CHECK(names[3] == "backbone.bn1.running_mean");
  CHECK(names[4] == "backbone.bn1.running_var");
  CHECK(names[5] == "backbone.bn1.num_batches_tracked");
  CHECK(names[6] == "backbone.layer1.0.conv1.weight");
  // torchvision resnet18 without fc: 120 state_dict entries, 11,176,512 parameters.
  const auto backbone_keys = std::count_if(names.begin(), names.end(),
                                           [](const std::string& n) { return n.rfind("backbone.", 0) == 0; });
  CHECK(backbone_keys == 120);
  CHECK(count_group(store, ParamGroup::backbone) == 11176512);
  CHECK(std::find(names.begin(), names.end(), "backbone.layer2.0.downsample.0.weight") != names.end());
  CHECK(std::find(names.begin(), names.end(), "backbone.layer2.0.downsample.1.running_var") != names.end());
  CHECK(std::find(names.begin(), names.end(), "backbone.layer1.0.downsample.0.weight") == names.end());
  const auto i = store.find_parameter("backbone.layer3.1.conv2.weight");
  REQUIRE(i >= 0);
  CHECK(store.parameters()[i].shape == std::vector<int>{256, 256, 3, 3});
  // Head: 512 channels -> PixelShuffle -> 128 -> deconv0 (IOHW) -> 17 -> deconv1 -> 17.
  CHECK(names[names.size() - 4] == "head.deconv0.weight");
  CHECK(names.back() == "head.deconv1.bias");
  const auto d0 = store.find_parameter("head.deconv0.weight");
  CHECK(store.parameters()[d0].shape == std::vector<int>{128, 17, 3, 3});
  CHECK(store.parameters()[store.find_parameter("head.deconv1.weight")].shape == std::vector<int>{17, 17, 3, 3});
}

TEST_CASE("resnet50 and resnet34 match torchvision's parameter counts", "[model]") {
  auto backend = model_test::cpu();
  {
    HeatmapModel m(*backend, ModelSpec{"resnet50", 4, 3});
    CHECK(count_group(m.store(), ParamGroup::backbone) == 23508032);  // 25,557,032 - fc
    const auto names = m.store().state_dict_names();
    CHECK(std::count_if(names.begin(), names.end(), [](const std::string& n) { return n.rfind("backbone.", 0) == 0; }) == 318);
    CHECK(m.store().parameters()[m.store().find_parameter("backbone.layer4.2.conv3.weight")].shape ==
          std::vector<int>{2048, 512, 1, 1});
    CHECK(m.store().parameters()[m.store().find_parameter("head.deconv0.weight")].shape ==
          std::vector<int>{512, 4, 3, 3});
    CHECK(m.store().find_parameter("head.deconv1.weight") < 0);  // d = 3: one deconv
  }
  {
    HeatmapModel m(*backend, ModelSpec{"resnet34", 4, 1});
    CHECK(count_group(m.store(), ParamGroup::backbone) == 21284672);  // 21,797,672 - fc
    CHECK(m.store().find_parameter("head.deconv2.weight") >= 0);      // d = 1: three deconvs
  }
}

TEST_CASE("groups are contiguous: backbone first, then head", "[model]") {
  auto backend = model_test::cpu();
  HeatmapModel m(*backend, ModelSpec{"resnet18", 3, 2});
  const auto bb = m.store().group_range(ParamGroup::backbone);
  const auto head = m.store().group_range(ParamGroup::head);
  CHECK(bb.offset == 0);
  CHECK(head.offset == bb.count);
  CHECK(head.offset + head.count == m.store().parameter_count());
}

TEST_CASE("unknown backbone and bad downsample factor are user errors", "[model]") {
  auto backend = model_test::cpu();
  CHECK_THROWS_AS(HeatmapModel(*backend, ModelSpec{"vit_h_sam", 3, 2}), trainer::UserError);
  CHECK_THROWS_AS(HeatmapModel(*backend, ModelSpec{"resnet18", 3, 4}), trainer::UserError);
}
