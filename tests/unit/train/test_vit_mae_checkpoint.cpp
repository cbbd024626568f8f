// model.backbone_checkpoint for vitb_imagenet: lightning-pose's load_vit_backbone_checkpoint
// (vit.py) lays a ViT-MAE checkpoint over the encoder: each vit_mae.vit.<name> whose
// name and shape match is loaded, everything else skipped. A file with none that fits
// is refused (lightning-pose would load nothing without a word).
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "../scratch_dir.hpp"  // unit_test::ScratchDir
#include "compute/backend.hpp"
#include "model/heatmap_model.hpp"
#include "train/pretrained_weights.hpp"
#include "util/error.hpp"

using namespace trainer;

namespace {

struct Entry {
  std::string name;
  std::vector<std::int64_t> shape;
  float value;
};

// A .safetensors file of float32 tensors, each filled with its value.
void write_safetensors(const std::string& path, const std::vector<Entry>& entries) {
  std::string header = "{", data;
  for (const Entry& e : entries) {
    std::size_t count = 1;
    std::string shape;
    for (auto d : e.shape) {
      count *= std::size_t(d);
      shape += (shape.empty() ? "" : ",") + std::to_string(d);
    }
    const std::size_t begin = data.size();
    for (std::size_t i = 0; i < count; ++i) data.append(reinterpret_cast<const char*>(&e.value), 4);
    header += std::string(header.size() > 1 ? "," : "") + "\"" + e.name + "\":{\"dtype\":\"F32\",\"shape\":[" + shape +
              "],\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(data.size()) + "]}";
  }
  header += "}";
  std::string bytes(8, '\0');
  const std::uint64_t n = header.size();
  std::memcpy(&bytes[0], &n, 8);
  std::ofstream(path, std::ios::binary) << bytes << header << data;
}

std::vector<float> param(model::HeatmapModel& net, const std::string& name, compute::Stream& s) {
  const long i = net.store().find_parameter(name);
  REQUIRE(i >= 0);
  return net.store().download_param(std::size_t(i), s);
}

}  // namespace

TEST_CASE("model.backbone_checkpoint lays vit_mae.vit.* tensors that fit over vitb_imagenet", "[train][vit][weights]") {
  const unit_test::ScratchDir dir_owner("mae-checkpoint");
  const std::string dir = dir_owner.str();
  auto b = compute::make_cpu_backend(1);
  auto& s = b->default_stream();
  model::HeatmapModel net(*b, model::ModelSpec{"vitb_imagenet", 3, 2});
  net.initialize(1, s);
  const auto bias_before = param(net, "backbone.vision_encoder.layernorm.bias", s);

  const std::string file = dir + "/mae.safetensors";
  write_safetensors(file, {{"vit_mae.vit.embeddings.cls_token", {1, 1, 768}, 0.5f},
                           {"vit_mae.vit.layernorm.weight", {768}, 2.f},
                           {"vit_mae.vit.layernorm.bias", {5}, 9.f},            // another shape: skipped
                           {"vit_mae.decoder.decoder_norm.weight", {512}, 9.f},  // the decoder: skipped
                           {"vit.layernorm.bias", {768}, 9.f}});                 // not vit_mae.*: skipped
  const train::PretrainedLoad got = train::load_vit_mae_checkpoint(file, net.store(), s);
  CHECK(got.format == "safetensors");
  CHECK(got.tensors == 2);
  CHECK(got.ignored == 3);
  for (float v : param(net, "backbone.vision_encoder.embeddings.cls_token", s)) REQUIRE(v == 0.5f);
  for (float v : param(net, "backbone.vision_encoder.layernorm.weight", s)) REQUIRE(v == 2.f);
  CHECK(param(net, "backbone.vision_encoder.layernorm.bias", s) == bias_before);  // kept

  // Nothing of it fits: an error naming the file, not a silent no-op.
  const std::string none = dir + "/decoder-only.safetensors";
  write_safetensors(none, {{"vit_mae.decoder.decoder_norm.weight", {512}, 1.f}});
  CHECK_THROWS_WITH(train::load_vit_mae_checkpoint(none, net.store(), s), Catch::Contains("decoder-only.safetensors"));
  CHECK_THROWS_AS(train::load_vit_mae_checkpoint(dir + "/missing.safetensors", net.store(), s), UserError);
}
