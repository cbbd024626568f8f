#pragma once
// The state_dict names lightning-pose gives this network's tensors. Our names are
// torchvision's (backbone.conv1.weight, backbone.layer1.0.bn1.running_mean) plus
// head.deconv<i>; lightning-pose keeps the ResNet's children in an nn.Sequential
// (conv1, bn1, relu, maxpool, layer1..4 -> backbone.0 .. backbone.7) and the head's
// layers in one (PixelShuffle, then the transposed convolutions ->
// head.upsampling_layers.1 ..): lightning_pose/models/backbones/factory.py
// (grab_layers_sequential) and heads/heatmap.py (make_upsampling_layers) at v2.4.0.
// The context model (heatmap_mhcrnn) has head.head_sf.deconv<i> (a HeatmapHead:
// head.head_sf.upsampling_layers.<i+1>) and head.head_mf.{W_pre,W_f,H_f,W_b,H_b},
// lightning-pose's own names (heads/heatmap_mhcrnn.py, UpsamplingCRNN). The
// EfficientNets' backbone.features.<i>... are lightning-pose's backbone.0.<i>...
// (grab_layers_sequential keeps `features` alone).
#include <string>  // std::string
#include <vector>  // std::vector

namespace trainer::model {

// lightning-pose's name for one of the heatmap or context (heatmap_mhcrnn) model's
// tensors; empty when the name has no lightning-pose counterpart.
std::string lightning_pose_state_name(const std::string& name);

// Further names lightning-pose's state_dict holds the same tensor under: the context
// head's UpsamplingCRNN keeps its modules in a `layers` ModuleList too, so
// head.head_mf.W_pre.weight is also head.head_mf.layers.0.weight (strict loading
// wants both). crnn_has_w_pre: the head has W_pre (upsampling_factor 2, stride-32
// backbones); without it (the ViTs) W_f is layers.0. Empty for every other tensor.
std::vector<std::string> lightning_pose_state_aliases(const std::string& name, bool crnn_has_w_pre);
// Whether a model with these state names (ours) has the context head's W_pre.
bool crnn_has_w_pre(const std::vector<std::string>& state_names);

// The inverse: our name for a lightning-pose state_dict key; empty when unknown, and
// for the `layers.<j>` aliases (the same values as the names they repeat).
std::string state_name_from_lightning_pose(const std::string& lp_name);

}  // namespace trainer::model
