#pragma once
// Builds the network for a config's model.model_type. The one list of model
// types: config_keys (and through it --help, `plan`, docs/CONFIG.md's checks)
// takes the names from here.
#include <memory>  // std::unique_ptr
#include <string>  // std::string
#include <vector>  // std::vector

#include "compute/backend.hpp"   // compute::Backend
#include "model/pose_model.hpp"  // PoseModel, ModelSpec

namespace trainer::model {

// The values of model.model_type, in the order --help lists them.
const std::vector<std::string>& model_type_names();

// "heatmap" -> HeatmapModel, "heatmap_mhcrnn" -> MhcrnnModel; UserError otherwise.
std::unique_ptr<PoseModel> make_pose_model(compute::Backend& backend, const std::string& model_type,
                                           const ModelSpec& spec);
// True for model types whose batches carry context frames (t-2 .. t+2).
bool needs_context_frames(const std::string& model_type);

}  // namespace trainer::model
