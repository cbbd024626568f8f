// The heatmap loss registry (see heatmap_loss_registry.hpp).
#include "compute/losses/heatmap_loss_registry.hpp"

#include "compute/losses/heatmap_js.hpp"   // heatmap_js_loss
#include "compute/losses/heatmap_kl.hpp"   // heatmap_kl_loss
#include "compute/losses/heatmap_mse.hpp"  // heatmap_mse_loss
#include "util/error.hpp"                  // UserError
#include "util/name_list.hpp"              // join_names

namespace trainer::compute {

const std::vector<const HeatmapLoss*>& heatmap_losses() {
  // One registration line per loss, in the order --help and the docs list them.
  static const std::vector<const HeatmapLoss*> losses{
      &heatmap_mse_loss(),
      &heatmap_kl_loss(),
      &heatmap_js_loss(),
  };
  return losses;
}

std::vector<std::string> heatmap_loss_names() {
  std::vector<std::string> names;
  for (const HeatmapLoss* loss : heatmap_losses()) names.emplace_back(loss->name());
  return names;
}

const HeatmapLoss& parse_heatmap_loss(const std::string& name) {
  for (const HeatmapLoss* loss : heatmap_losses())
    if (name == loss->name()) return *loss;
  throw UserError("unknown heatmap loss '" + name + "'", "the heatmap losses are " + join_names(heatmap_loss_names()));
}

}  // namespace trainer::compute
