#pragma once
// Builds the network for a config's model.model_type.
#include <memory>  // std::unique_ptr
#include <string>  // std::string

#include "compute/backend.hpp"   // compute::Backend
#include "model/pose_model.hpp"  // PoseModel, ModelSpec

namespace trainer::model {

// "heatmap" -> HeatmapModel, "heatmap_mhcrnn" -> MhcrnnModel; UserError otherwise.
std::unique_ptr<PoseModel> make_pose_model(compute::Backend& backend, const std::string& model_type,
                                           const ModelSpec& spec);
// True for model types whose batches carry context frames (t-2 .. t+2).
bool needs_context_frames(const std::string& model_type);

}  // namespace trainer::model
