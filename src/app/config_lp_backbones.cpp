// Lightning-pose's backbone names (see config_lp_backbones.hpp).
#include "app/config_lp_backbones.hpp"

#include <algorithm>  // std::find
#include <cctype>     // std::tolower

#include "app/config_values.hpp"        // RefusedValue
#include "model/backbone_registry.hpp"  // model::backbone_names
#include "util/name_list.hpp"           // join_names

namespace trainer::app::config_detail {

namespace {

// lightning-pose 1.x's names (models/base.py) that 2.x no longer accepts, and what 2.x
// calls the backbone now ("": dropped).
struct RemovedName {
  const char* name;
  const char* now;
};
constexpr RemovedName kRemovedNames[] = {{"resnet50_contrastive", ""}, {"vit_b_sam", "vitb_sam"}, {"vit_h_sam", ""}};

}  // namespace

const std::vector<std::string>& lightning_pose_backbone_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all = {
        // lightning_pose/models/backbones/factory.py at f54c477 (v2.4.0)
        "resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "resnet50_animal_apose",
        "resnet50_animal_ap10k", "resnet50_human_jhmdb", "resnet50_human_res_rle", "resnet50_human_top_res",
        "resnet50_human_hand", "efficientnet_b0", "efficientnet_b1", "efficientnet_b2", "vits_dino", "vits_dinov2",
        "vits_dinov3", "vitb_dino", "vitb_dinov2", "vitb_dinov3", "vitb_imagenet", "vitb_sam", "vitb_sam2",
        "vits_sam2", "vitt_sam2"};
    for (const auto& removed : kRemovedNames) all.emplace_back(removed.name);
    return all;
  }();
  return names;
}

void refuse_missing_lp_backbone(const std::string& given) {
  std::string name = given;  // model.backbone is matched without regard to case
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto& lp = lightning_pose_backbone_names();
  const auto& ours = model::backbone_names();
  if (std::find(lp.begin(), lp.end(), name) == lp.end()) return;
  if (std::find(ours.begin(), ours.end(), name) != ours.end()) return;
  for (const auto& removed : kRemovedNames)
    if (name == removed.name)
      throw RefusedValue("'" + name + "' is a lightning-pose 1.x backbone that lightning-pose 2 " +
                             (*removed.now ? "calls " + std::string(removed.now) : std::string("dropped")),
                         "model.backbone is one of: " + join_names(ours));
  throw RefusedValue("'" + name + "' is a lightning-pose backbone this trainer does not have yet",
                     "model.backbone is one of: " + join_names(ours));
}

}  // namespace trainer::app::config_detail
