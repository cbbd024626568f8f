// Model selection (see make_model.hpp).
#include "model/make_model.hpp"

#include "model/heatmap_model.hpp"  // HeatmapModel
#include "model/mhcrnn_model.hpp"   // MhcrnnModel
#include "util/error.hpp"           // UserError

namespace trainer::model {

std::unique_ptr<PoseModel> make_pose_model(compute::Backend& backend, const std::string& model_type,
                                           const ModelSpec& spec) {
  if (model_type == "heatmap") return std::make_unique<HeatmapModel>(backend, spec);
  if (model_type == "heatmap_mhcrnn") return std::make_unique<MhcrnnModel>(backend, spec);
  throw UserError("unknown model.model_type '" + model_type + "'", "use heatmap or heatmap_mhcrnn");
}

bool needs_context_frames(const std::string& model_type) { return model_type == "heatmap_mhcrnn"; }

}  // namespace trainer::model
