// Model selection (see make_model.hpp).
#include "model/make_model.hpp"

#include "model/heatmap_model.hpp"  // HeatmapModel
#include "model/mhcrnn_model.hpp"   // MhcrnnModel
#include "util/error.hpp"           // UserError

namespace trainer::model {
namespace {

template <class Model>
std::unique_ptr<PoseModel> make(compute::Backend& backend, const ModelSpec& spec) {
  return std::make_unique<Model>(backend, spec);
}

struct ModelTypeEntry {
  const char* name;
  std::unique_ptr<PoseModel> (*make)(compute::Backend& backend, const ModelSpec& spec);
  bool context_frames;  // batches carry frames t-2 .. t+2
};

constexpr ModelTypeEntry kModelTypes[] = {
    {"heatmap", make<HeatmapModel>, false},
    {"heatmap_mhcrnn", make<MhcrnnModel>, true},
};

const ModelTypeEntry* find_model_type(const std::string& name) {
  for (const auto& entry : kModelTypes) {
    if (name == entry.name) return &entry;
  }
  return nullptr;
}

}  // namespace

const std::vector<std::string>& model_type_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& entry : kModelTypes) out.emplace_back(entry.name);
    return out;
  }();
  return names;
}

std::unique_ptr<PoseModel> make_pose_model(compute::Backend& backend, const std::string& model_type,
                                           const ModelSpec& spec) {
  if (const auto* entry = find_model_type(model_type)) return entry->make(backend, spec);
  std::string names;
  for (const auto& n : model_type_names()) names += (names.empty() ? "" : " or ") + n;
  throw UserError("unknown model.model_type '" + model_type + "'", "use " + names);
}

bool needs_context_frames(const std::string& model_type) {
  const auto* entry = find_model_type(model_type);
  return entry != nullptr && entry->context_frames;
}

}  // namespace trainer::model
