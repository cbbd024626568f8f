// EfficientNet-B0/B1/B2 (model/efficientnet.hpp): torchvision's layout and parameter
// counts, lightning-pose's names for its tensors, and stochastic depth's draws (train
// mode only, keyed by the step and the rank). PyTorch parity of the whole step:
// tests/integration/parity_model.sh.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "model/backbone_registry.hpp"
#include "model/efficientnet.hpp"
#include "model/lightning_pose_names.hpp"
#include "model_test_util.hpp"
#include "util/error.hpp"

using namespace trainer;

namespace {

std::size_t parameter_count(const model::ParameterStore& store) {
  std::size_t n = 0;
  for (const auto& e : store.parameters()) n += e.count;
  return n;
}

}  // namespace

TEST_CASE("efficientnet b0/b1/b2: torchvision's blocks, channels and parameter counts (features only)",
          "[model][efficientnet]") {
  struct Expected {
    const char* name;
    std::size_t blocks, parameters;
    int out_channels, stem;
  };
  // sum(p.numel() for p in torchvision.models.efficientnet_bX().features.parameters())
  for (const Expected e : {Expected{"efficientnet_b0", 16, 4007548, 1280, 32},
                           Expected{"efficientnet_b1", 23, 6513184, 1280, 32},
                           Expected{"efficientnet_b2", 23, 7700994, 1408, 32}}) {
    INFO(e.name);
    const model::EfficientNetSpec spec = model::efficientnet_spec(e.name);
    std::size_t blocks = 0;
    for (const auto& stage : spec.stages) blocks += stage.size();
    CHECK(blocks == e.blocks);
    CHECK(spec.out_channels == e.out_channels);
    CHECK(spec.stem_channels == e.stem);
    // torchvision: sd_prob = 0.2 * block / total, the first block 0.
    CHECK(spec.stages.front().front().drop_probability == 0.0);
    CHECK(spec.stages.back().back().drop_probability == Approx(0.2 * double(blocks - 1) / double(blocks)));
    auto b = model_test::cpu();
    model::ParameterStore store(*b);
    const auto backbone = model::make_backbone(e.name, store, "backbone.");
    CHECK(parameter_count(store) == e.parameters);
    CHECK(backbone->out_channels() == e.out_channels);
    CHECK(backbone->stride() == 32);
  }
  CHECK_THROWS_AS(model::efficientnet_spec("efficientnet_b3"), UserError);
}

TEST_CASE("efficientnet tensors: torchvision's names, lightning-pose's backbone.0.* and back",
          "[model][efficientnet][lp-names]") {
  auto b = model_test::cpu();
  model::ParameterStore store(*b);
  const auto backbone = model::make_backbone("efficientnet_b0", store, "backbone.");
  // A block with expansion (features.2.0: expand, depthwise, squeeze-excitation, project)
  // and one without (features.1.0).
  for (const char* name : {"backbone.features.0.0.weight", "backbone.features.1.0.block.0.0.weight",
                           "backbone.features.1.0.block.1.fc1.bias", "backbone.features.1.0.block.2.1.running_var",
                           "backbone.features.2.0.block.3.0.weight", "backbone.features.8.1.weight"})
    CHECK((store.find_parameter(name) >= 0 || store.find_buffer(name) >= 0));
  for (const auto& e : store.parameters()) {
    const std::string lp = model::lightning_pose_state_name(e.name);
    CHECK(lp == "backbone.0." + e.name.substr(std::string("backbone.features.").size()));
    CHECK(model::state_name_from_lightning_pose(lp) == e.name);
  }
  // A torchvision .pth's names gain "backbone."; its classifier is not the backbone's.
  CHECK(model::backbone_tensor_name("features.3.1.block.1.0.weight") == "backbone.features.3.1.block.1.0.weight");
  CHECK(model::backbone_tensor_name("classifier.1.weight").empty());
  // A ResNet's lightning-pose names still map as before (backbone.0 is its conv1).
  CHECK(model::state_name_from_lightning_pose("backbone.0.weight") == "backbone.conv1.weight");
  CHECK(model::state_name_from_lightning_pose("backbone.4.0.conv1.weight") == "backbone.layer1.0.conv1.weight");
}

TEST_CASE("efficientnet stochastic depth: drawn in train mode after prepare_training_step, per rank, never in eval",
          "[model][efficientnet]") {
  auto b = model_test::cpu();
  auto& s = b->default_stream();
  model::ParameterStore store(*b);
  auto backbone = model::make_backbone("efficientnet_b0", store, "backbone.");
  store.allocate();
  store.initialize(3, s);
  const compute::Shape4 in{6, 3, 32, 32};
  const auto images = model_test::random_vector(in.numel(), 5);
  compute::DeviceBuffer x(*b, in.numel());
  b->upload(x.data(), images.data(), images.size(), s);

  const auto draws_for = [&](const model::StepKey& key, bool training) {
    model::Context ctx{*b, s, training, nullptr, nullptr};
    backbone->prepare_training_step(ctx, key, 1);
    backbone->forward(ctx, {x.data(), in});
    s.synchronize();
    return backbone->training_draws();
  };
  const auto first = draws_for({7, 0, 3, 0}, true);
  // Blocks with a residual and a probability above 0: 9 of B0's 16 (features.1.0,
  // the first of each stage and the single-block last stage have no residual).
  REQUIRE(first.size() == 9);
  int dropped = 0;
  for (const auto& [name, factors] : first) {
    CHECK(name.rfind("stochastic_depth/backbone.features.", 0) == 0);
    CHECK(factors.size() == 6);
    for (float f : factors) dropped += f == 0.f;
  }
  CHECK(draws_for({7, 0, 3, 0}, true) == first);   // the same step draws alike (a resume, a replay)
  CHECK(draws_for({7, 0, 4, 0}, true) != first);   // the next batch draws again
  CHECK(draws_for({7, 0, 3, 1}, true) != first);   // another rank drops other rows
  // Eval mode never drops: its features do not depend on the step's key; train mode's do.
  const auto features_for = [&](const model::StepKey& key, bool training) {
    model::Context ctx{*b, s, training, nullptr, nullptr};
    backbone->prepare_training_step(ctx, key, 1);
    const auto y = backbone->forward(ctx, {x.data(), in});
    std::vector<float> out(y.shape.numel());
    b->download(out.data(), y.data, out.size(), s);
    s.synchronize();
    return out;
  };
  CHECK(features_for({7, 0, 3, 0}, false) == features_for({7, 0, 4, 0}, false));
  CHECK(features_for({7, 0, 3, 0}, true) != features_for({7, 0, 4, 0}, true));
  // Probabilities 0.0125 .. 0.1875 over 54 rows: some dropped, most kept (this key's draws).
  CHECK(dropped > 0);
  CHECK(dropped < 27);
}
