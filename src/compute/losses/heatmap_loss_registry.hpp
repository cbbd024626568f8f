#pragma once
// The one list of heatmap losses. Each loss declares itself in its own files
// (heatmap_<name>.hpp, the formula for the CPU and CUDA, and heatmap_<name>.cu);
// heatmap_loss_registry.cpp registers it with one line. The config key, --help,
// the docs check and the loss tests all take their names from here.
#include <string>  // std::string
#include <vector>  // std::vector

#include "compute/losses/heatmap_loss.hpp"  // HeatmapLoss

namespace trainer::compute {

// Every registered loss, in registration order (the order users see them in).
const std::vector<const HeatmapLoss*>& heatmap_losses();
// Their names, in the same order.
std::vector<std::string> heatmap_loss_names();
// The loss called `name`; throws UserError naming the registered losses.
const HeatmapLoss& parse_heatmap_loss(const std::string& name);

}  // namespace trainer::compute
