#pragma once
// The state_dict names lightning-pose gives this network's tensors. Our names are
// torchvision's (backbone.conv1.weight, backbone.layer1.0.bn1.running_mean) plus
// head.deconv<i>; lightning-pose keeps the ResNet's children in an nn.Sequential
// (conv1, bn1, relu, maxpool, layer1..4 -> backbone.0 .. backbone.7) and the head's
// layers in one (PixelShuffle, then the transposed convolutions ->
// head.upsampling_layers.1 ..): lightning_pose/models/backbones/factory.py
// (grab_layers_sequential) and heads/heatmap.py (make_upsampling_layers) at v2.4.0.
#include <string>  // std::string

namespace trainer::model {

// lightning-pose's name for one of the heatmap model's tensors; empty when the name
// has no lightning-pose counterpart here (the context model's head, whose layout
// this mapping does not cover yet).
std::string lightning_pose_state_name(const std::string& name);

// The inverse: our name for a lightning-pose state_dict key; empty when unknown.
std::string state_name_from_lightning_pose(const std::string& lp_name);

}  // namespace trainer::model
