// lightning-pose's state_dict names (see lightning_pose_names.hpp).
#include "model/lightning_pose_names.hpp"

#include <cctype>   // std::isdigit
#include <utility>  // std::pair
#include <vector>   // std::vector

namespace trainer::model {
namespace {

// The ResNet children before layer1 that hold tensors, by their Sequential index.
struct Child {
  const char* ours;
  int index;
};
constexpr Child kStem[] = {{"conv1", 0}, {"bn1", 1}};
constexpr int kLayer1Index = 4;  // conv1, bn1, relu, maxpool come first
// The EfficientNets: lightning-pose keeps only `features`, as the Sequential's child 0
// (backbone.0.<stage>...), where ours are torchvision's (backbone.features.<stage>...).
constexpr const char* kFeatures = "backbone.features.";
constexpr const char* kLpFeatures = "backbone.0.";
// The ViT backbones keep lightning-pose's VisionEncoder names (model/vit.hpp).
constexpr const char* kVisionEncoder = "backbone.vision_encoder.";

// The context model's heads (lightning_pose/models/heads/heatmap_mhcrnn.py).
constexpr const char* kSfDeconv = "head.head_sf.deconv";
constexpr const char* kSfLayers = "head.head_sf.upsampling_layers.";
constexpr const char* kMf = "head.head_mf.";
// UpsamplingCRNN's modules in the order of its `layers` ModuleList, which registers
// them a second time; W_pre exists with upsampling_factor 2 only (the ResNets'
// stride 32), so an index counts the modules present before it.
constexpr const char* kCrnnModules[] = {"W_pre", "W_f", "H_f", "W_b", "H_b"};

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// "12.rest" -> (12, "rest"); (-1, "") when `s` does not start with a number and a dot.
std::pair<int, std::string> leading_index(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size() && i < 4 && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == 0 || i >= s.size() || s[i] != '.') return {-1, ""};
  return {std::stoi(s.substr(0, i)), s.substr(i + 1)};
}

}  // namespace

std::string lightning_pose_state_name(const std::string& name) {
  if (starts_with(name, kVisionEncoder)) return name;  // the ViTs: lightning-pose's names already
  if (starts_with(name, kFeatures)) return kLpFeatures + name.substr(std::string(kFeatures).size());
  if (starts_with(name, "backbone.")) {
    const std::string rest = name.substr(9);
    for (const auto& c : kStem)
      if (starts_with(rest, std::string(c.ours) + "."))
        return "backbone." + std::to_string(c.index) + rest.substr(std::string(c.ours).size());
    if (starts_with(rest, "layer") && rest.size() > 6 && rest[6] == '.' && rest[5] >= '1' && rest[5] <= '4')
      return "backbone." + std::to_string(kLayer1Index + (rest[5] - '1')) + rest.substr(6);
    return "";
  }
  if (starts_with(name, "head.deconv")) {
    const auto [i, rest] = leading_index(name.substr(11));
    if (i < 0) return "";
    return "head.upsampling_layers." + std::to_string(i + 1) + "." + rest;  // index 0 is the PixelShuffle
  }
  // The context model: its single-frame head is a HeatmapHead under head_sf, its
  // multi-frame head an UpsamplingCRNN under head_mf whose names are lightning-pose's.
  if (starts_with(name, kSfDeconv)) {
    const auto [i, rest] = leading_index(name.substr(std::string(kSfDeconv).size()));
    if (i < 0) return "";
    return std::string(kSfLayers) + std::to_string(i + 1) + "." + rest;
  }
  if (starts_with(name, kMf)) {
    for (const char* m : kCrnnModules)
      if (starts_with(name.substr(std::string(kMf).size()), std::string(m) + ".")) return name;
  }
  return "";
}

std::vector<std::string> lightning_pose_state_aliases(const std::string& name, bool crnn_has_w_pre) {
  if (!starts_with(name, kMf)) return {};
  const std::string rest = name.substr(std::string(kMf).size());
  int index = 0;
  for (const char* m : kCrnnModules) {
    if (!crnn_has_w_pre && std::string(m) == "W_pre") continue;
    const std::string prefix = std::string(m) + ".";
    if (starts_with(rest, prefix))
      return {std::string(kMf) + "layers." + std::to_string(index) + "." + rest.substr(prefix.size())};
    ++index;
  }
  return {};
}

bool crnn_has_w_pre(const std::vector<std::string>& state_names) {
  for (const auto& n : state_names)
    if (starts_with(n, std::string(kMf) + "W_pre.")) return true;
  return false;
}

std::string state_name_from_lightning_pose(const std::string& lp_name) {
  if (starts_with(lp_name, kVisionEncoder)) return lp_name;
  // backbone.0.<stage>.*: an EfficientNet's features (a ResNet's child 0 is conv1,
  // backbone.0.weight, with no index after it).
  if (starts_with(lp_name, kLpFeatures) && leading_index(lp_name.substr(std::string(kLpFeatures).size())).first >= 0)
    return kFeatures + lp_name.substr(std::string(kLpFeatures).size());
  if (starts_with(lp_name, "backbone.")) {
    const auto [i, rest] = leading_index(lp_name.substr(9));
    for (const auto& c : kStem)
      if (i == c.index) return "backbone." + std::string(c.ours) + "." + rest;
    if (i >= kLayer1Index && i < kLayer1Index + 4)
      return "backbone.layer" + std::to_string(i - kLayer1Index + 1) + "." + rest;
    return "";
  }
  if (starts_with(lp_name, "head.upsampling_layers.")) {
    const auto [i, rest] = leading_index(lp_name.substr(23));
    if (i < 1) return "";
    return "head.deconv" + std::to_string(i - 1) + "." + rest;
  }
  if (starts_with(lp_name, kSfLayers)) {
    const auto [i, rest] = leading_index(lp_name.substr(std::string(kSfLayers).size()));
    if (i < 1) return "";
    return std::string(kSfDeconv) + std::to_string(i - 1) + "." + rest;
  }
  // head_mf's own names; its `layers.<j>` aliases (the same tensors again) map to none.
  if (starts_with(lp_name, kMf)) return lightning_pose_state_name(lp_name);
  return "";
}

}  // namespace trainer::model
