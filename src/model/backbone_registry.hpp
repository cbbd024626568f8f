#pragma once
// Every backbone the trainer can build, by name (the value of model.backbone).
// This is the one place that lists them: config_keys (and through it --help,
// `plan` and docs/CONFIG.md's checks), bench step and both heatmap models take
// the names and the factories from here.
#include <memory>  // std::unique_ptr
#include <string>  // std::string
#include <vector>  // std::vector

#include "model/backbone.hpp"         // Backbone
#include "model/parameter_store.hpp"  // ParameterStore

namespace trainer::model {

// In the order --help lists them.
const std::vector<std::string>& backbone_names();

// Builds backbone `name`, registering its tensors in `store` under `prefix`
// (see backbone.hpp). Throws UserError for an unknown name.
std::unique_ptr<Backbone> make_backbone(const std::string& name, ParameterStore& store, const std::string& prefix);

}  // namespace trainer::model
