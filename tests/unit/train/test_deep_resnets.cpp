// ResNet-101 and ResNet-152 (lightning-pose's resnet101 / resnet152): torchvision's
// block counts and parameter counts, a torchvision-format .pth of every backbone
// tensor (written here, fc.* included) loads tensor for tensor, and one CPU
// training step moves the weights with a finite loss.
#include <catch2/catch.hpp>

#include <cmath>     // std::isfinite
#include <cstdint>   // std::int64_t
#include <cstdio>    // std::remove
#include <random>    // std::mt19937
#include <string>    // std::string
#include <unistd.h>  // getpid
#include <vector>    // std::vector

#include "compute/backend.hpp"
#include "compute/losses/heatmap_mse.hpp"  // heatmap_mse_loss
#include "model/backbone_registry.hpp"     // backbone_weights_url
#include "model/heatmap_model.hpp"
#include "train/gradient_sync.hpp"       // LocalGradientSync
#include "train/optimizer.hpp"           // Optimizer
#include "train/pretrained_weights.hpp"  // load_pretrained_backbone
#include "train/step.hpp"                // StepRunner
#include "train_test_util.hpp"           // MemorySource
#include "util/torch_writer.hpp"         // PickleValue, write_torch_file

using namespace trainer;

namespace {

struct DeepResNet {
  const char* name;
  int layer_blocks[4];
  std::size_t backbone_parameters;  // torchvision's resnetXXX() count minus fc (2048*1000 + 1000)
  const char* url_file;
};
constexpr DeepResNet kDeepResNets[] = {
    {"resnet101", {3, 4, 23, 3}, 44549160 - 2049000, "resnet101-cd907fc2.pth"},
    {"resnet152", {3, 8, 36, 3}, 60192808 - 2049000, "resnet152-f82ba261.pth"},
};

StoredTensor float_tensor(const std::vector<int>& shape, const std::vector<float>& values) {
  StoredTensor t;
  for (int d : shape) t.shape.push_back(d);
  t.bytes.assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  return t;
}

// Values unlike the model's initialization, different per tensor: a file that is
// read into the wrong tensor (or not at all) shows.
std::vector<float> file_values(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-0.05f, 0.05f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(gen);
  return v;
}
constexpr std::uint32_t kBufferSeeds = 100000;  // buffer i's values come from seed kBufferSeeds + i

bool is_backbone(const std::string& name) { return name.rfind("backbone.", 0) == 0; }

// torchvision's state_dict of the backbone (names without "backbone."), plus an fc
// layer the loader must ignore, written as torch.save writes it.
void write_torchvision_file(const std::string& path, const model::ParameterStore& store) {
  PickleValue state = PickleValue::ordered_dict();
  for (std::size_t i = 0; i < store.parameters().size(); ++i) {
    const auto& e = store.parameters()[i];
    if (!is_backbone(e.name)) continue;  // the head's tensors are not in torchvision's file
    state.set(e.name.substr(9), PickleValue::tensor(float_tensor(e.shape, file_values(e.count, std::uint32_t(i)))));
  }
  for (std::size_t i = 0; i < store.buffers().size(); ++i) {
    const auto& e = store.buffers()[i];
    if (!is_backbone(e.name)) continue;
    auto v = file_values(e.count, kBufferSeeds + std::uint32_t(i));
    if (e.name.find("running_var") != std::string::npos)
      for (auto& x : v) x = 1.f + std::fabs(x);  // a variance is positive
    state.set(e.name.substr(9), PickleValue::tensor(float_tensor(e.shape, v)));
  }
  for (const auto& c : store.counters()) {
    StoredTensor count;
    count.type = StoredType::i64;
    const std::int64_t steps = 77;
    count.bytes.assign(reinterpret_cast<const char*>(&steps), sizeof steps);
    state.set(c.name.substr(9), PickleValue::tensor(count));
  }
  state.set("fc.weight", PickleValue::tensor(float_tensor({10, 2048}, std::vector<float>(10 * 2048, 0.5f))));
  state.set("fc.bias", PickleValue::tensor(float_tensor({10}, std::vector<float>(10, 0.5f))));
  write_torch_file(path, state);
}

}  // namespace

TEST_CASE("resnet101 and resnet152: torchvision's shapes, a torchvision .pth loads, one CPU step trains",
          "[model][backbone][deep_resnet][train]") {
  for (const auto& spec : kDeepResNets) {
    INFO(spec.name);
    auto b = compute::make_cpu_backend(2);
    auto& s = b->default_stream();
    model::HeatmapModel net(*b, model::ModelSpec{spec.name, 2, 2});
    net.initialize(3, s);
    auto& store = net.store();
    const long deconv0 = store.find_parameter("head.deconv0.weight");
    REQUIRE(deconv0 >= 0);
    CHECK(store.parameters()[std::size_t(deconv0)].shape[0] == 2048 / 4);  // the head takes C/4 after PixelShuffle(2)
    CHECK(store.group_range(model::ParamGroup::backbone).count == spec.backbone_parameters);
    for (int layer = 0; layer < 4; ++layer) {  // the last block of each layer exists, the next does not
      const std::string stem = "backbone.layer" + std::to_string(layer + 1) + ".";
      CHECK(store.find_parameter(stem + std::to_string(spec.layer_blocks[layer] - 1) + ".conv3.weight") >= 0);
      CHECK(store.find_parameter(stem + std::to_string(spec.layer_blocks[layer]) + ".conv3.weight") < 0);
    }
    const std::string url = model::backbone_weights_url(spec.name);
    CHECK(url.substr(url.rfind('/') + 1) == spec.url_file);

    // Every backbone tensor read from a torchvision-format file, fc.* ignored.
    const std::string path = std::string("deep_resnet_test.") + spec.name + "." + std::to_string(::getpid()) + ".pth";
    write_torchvision_file(path, store);
    const train::PretrainedLoad load = train::load_pretrained_backbone(path, store, s);
    std::remove(path.c_str());
    std::size_t backbone_tensors = 0;
    for (const auto& e : store.parameters()) backbone_tensors += is_backbone(e.name);
    for (const auto& e : store.buffers()) backbone_tensors += is_backbone(e.name);
    backbone_tensors += store.counters().size();
    CHECK(load.tensors == int(backbone_tensors));
    CHECK(load.ignored == 2);
    for (const char* name : {"backbone.conv1.weight", "backbone.layer3.22.conv3.weight", "backbone.layer4.2.bn3.bias"}) {
      INFO(name);
      const long i = store.find_parameter(name);
      REQUIRE(i >= 0);
      CHECK(store.download_param(std::size_t(i), s) == file_values(store.parameters()[std::size_t(i)].count, std::uint32_t(i)));
    }
    const long var = store.find_buffer("backbone.layer2.3.bn1.running_var");
    REQUIRE(var >= 0);
    auto expected_var = file_values(store.buffers()[std::size_t(var)].count, kBufferSeeds + std::uint32_t(var));
    for (auto& x : expected_var) x = 1.f + std::fabs(x);
    CHECK(store.download_buffer(std::size_t(var), s) == expected_var);
    CHECK(store.counters().back().value == 77);

    // One training step on the CPU: finite loss, every group's weights move.
    train::Optimizer optimizer(store, train::OptimizerConfig{});
    optimizer.set_group(model::ParamGroup::head, 1e-3, true);
    optimizer.set_group(model::ParamGroup::backbone, 1e-3, true);
    train::StepRunner runner(*b, s, net, compute::heatmap_mse_loss());
    train_test::MemorySource src(2, 2, 64, 2, 7);
    train::LocalGradientSync sync;
    src.start_epoch(0);
    std::vector<float> before(store.parameter_count()), after(store.parameter_count());
    b->download(before.data(), store.params_data(), before.size(), s);
    runner.train_step(*src.next(), optimizer, sync, true, nullptr);
    runner.request_loss();
    const double loss = runner.requested_loss();
    b->download(after.data(), store.params_data(), after.size(), s);
    s.synchronize();
    CHECK(std::isfinite(loss));
    CHECK(loss > 0);
    const auto moved = [&](model::ParamGroup g) {
      const auto r = store.group_range(g);
      for (std::size_t i = r.offset; i < r.offset + r.count; ++i)
        if (before[i] != after[i]) return true;
      return false;
    };
    CHECK(moved(model::ParamGroup::backbone));
    CHECK(moved(model::ParamGroup::head));
  }
}
