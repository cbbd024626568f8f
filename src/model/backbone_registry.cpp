// The backbone table (see backbone_registry.hpp). Adding a backbone: its class in
// its own files, implementing Backbone, and one line in kBackbones below.
#include "model/backbone_registry.hpp"

#include "model/resnet.hpp"  // make_resnet
#include "util/error.hpp"    // UserError

namespace trainer::model {
namespace {

using BackboneFactory = std::unique_ptr<Backbone> (*)(ParameterStore& store, const std::string& name,
                                                      const std::string& prefix);

struct BackboneEntry {
  const char* name;
  BackboneFactory make;
};

// A constant table rather than self-registering globals: no static mutable state,
// and the list (and its order in --help) is in one visible place.
constexpr BackboneEntry kBackbones[] = {
    {"resnet18", make_resnet},
    {"resnet34", make_resnet},
    {"resnet50", make_resnet},
};

const BackboneEntry& find_backbone(const std::string& name) {
  for (const auto& entry : kBackbones) {
    if (name == entry.name) return entry;
  }
  std::string names;
  for (const auto& n : backbone_names()) names += (names.empty() ? "" : ", ") + n;
  throw UserError("unknown backbone '" + name + "'", "model.backbone is one of: " + names);
}

}  // namespace

const std::vector<std::string>& backbone_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& entry : kBackbones) out.emplace_back(entry.name);
    return out;
  }();
  return names;
}

std::unique_ptr<Backbone> make_backbone(const std::string& name, ParameterStore& store, const std::string& prefix) {
  return find_backbone(name).make(store, name, prefix);
}

}  // namespace trainer::model
