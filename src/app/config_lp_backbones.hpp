#pragma once
// Lightning-pose's backbone names, so that one this trainer lacks is refused as such
// ("'vit_h_sam' is a lightning-pose 1.x backbone that lightning-pose 2 dropped") and
// not as a typo of the nearest name we have. Which backbones exist is
// model::backbone_names()'s to say (src/model/backbone_registry.cpp); this list only
// names lightning-pose's, and a name both have is simply accepted.
#include <string>  // std::string
#include <vector>  // std::vector

namespace trainer::app::config_detail {

// Every model.backbone that lightning-pose 1.x and 2.x accept
// (lightning_pose/models/backbones/factory.py at v2.4.0, and older names).
const std::vector<std::string>& lightning_pose_backbone_names();

// Throws RefusedValue when `name` (any case) is a lightning-pose backbone that
// model::backbone_names() lacks (today only lightning-pose 1.x's removed names);
// otherwise does nothing.
void refuse_missing_lp_backbone(const std::string& name);

}  // namespace trainer::app::config_detail
