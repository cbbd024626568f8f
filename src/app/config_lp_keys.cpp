// lightning-pose's YAML keys and their fate (see config_lp_keys.hpp).
#include "app/config_lp_keys.hpp"

#include <yaml-cpp/yaml.h>  // YAML::Emitter, for config_to_yaml

#include <set>  // std::set

#include "app/config_values.hpp"  // BadValue, closest, parse_bool, parse_list, parse_real
#include "util/error.hpp"         // UserError
#include "util/name_list.hpp"     // join_names

namespace trainer::app::config_detail {
namespace {

const std::string kDocs = "docs/CONFIG.md lists every lightning-pose key and what happens to it";

LpKeyRule ignored(const char* path, const char* what) { return {path, false, what, nullptr}; }
LpKeyRule ignored_section(const char* path, const char* what) { return {path, true, what, nullptr}; }

// Accepted when `ok(leaf)` holds (null always is); an error otherwise.
LpKeyRule only_if(const char* path, const char* what, std::function<bool(const YamlLeaf&)> ok, std::string refusal,
                  std::string hint) {
  return {path, false, what, [ok, refusal, hint](const YamlLeaf& leaf) {
            if (leaf.is_null || ok(leaf)) return LpVerdict{};
            return LpVerdict{LpVerdict::kError, refusal, hint};
          }};
}

// Accepted always; a warning when `ok(leaf)` fails (something lightning-pose would
// do after training that the trainer does not do yet).
[[maybe_unused]] LpKeyRule warn_unless(const char* path, const char* what, std::function<bool(const YamlLeaf&)> ok,
                                       std::string warning) {
  return {path, false, what, [ok, warning](const YamlLeaf& leaf) {
            if (leaf.is_null || ok(leaf)) return LpVerdict{};
            return LpVerdict{LpVerdict::kWarn, warning, ""};
          }};
}

bool is_false(const YamlLeaf& leaf) {
  try {
    return !parse_bool(leaf.value);
  } catch (const BadValue&) {
    return false;
  }
}

std::vector<LpKeyRule> build_rules() {
  const char* unsupervised = "used only by the unsupervised losses listed in model.losses_to_use";
  return {
      // data
      only_if("data.view_names", "multiview projects: refused unless null", [](const YamlLeaf&) { return false; },
              "multiview projects are not supported",
              "train one view per run with data.csv_file set to that view's CSV"),
      only_if("data.bbox_file", "multiview bounding boxes: refused unless null", [](const YamlLeaf&) { return false; },
              "bounding-box files are not supported", "remove data.bbox_file"),
      // training
      only_if("training.imgaug_3d", "multiview 3D augmentation: false accepted, true refused", is_false,
              "multiview 3D augmentation is not supported", "set training.imgaug_3d=false"),
      only_if("training.lr_scheduler", "multisteplr accepted (training.lr_scheduler_milestones / gamma), others "
                                       "refused",
              [](const YamlLeaf& leaf) { return leaf.value == "multisteplr"; },
              "only multisteplr is supported",
              "set training.lr_scheduler=multisteplr (milestones and gamma under lr_scheduler_params.multisteplr)"),
      ignored("training.dropout_rate", "not read by lightning-pose's heatmap models either: accepted, not used"),
      only_if("training.unfreezing_step", "step-based schedule: refused",
              [](const YamlLeaf&) { return false; }, "step-based schedules are not supported",
              "use training.unfreezing_epoch"),
      only_if("training.min_steps", "step-based schedule: refused", [](const YamlLeaf&) { return false; },
              "step-based schedules are not supported",
              "use training.min_epochs (training.max_steps is supported)"),
      only_if("training.lr_scheduler_params.multisteplr.milestone_steps", "step-based schedule: refused",
              [](const YamlLeaf&) { return false; },
              "step-based schedules are not supported",
              "use training.lr_scheduler_params.multisteplr.milestones (epochs)"),
      ignored_section("training.patch_mask", "multiview transformer patch masking: accepted, not used"),
      // model
      only_if("model.checkpoint", "lightning-pose .ckpt to start from: null accepted, a path refused",
              [](const YamlLeaf&) { return false; },
              "lightning-pose .ckpt files cannot be loaded",
              "continue a trainer run with `trainer train --resume RUN/checkpoints/last.h5`, or start from "
              "pretrained backbone weights"),
      // dali (NVIDIA DALI video reading for unsupervised losses and video prediction)
      ignored("dali.base.predict.sequence_length", "video frames per prediction batch: accepted, not used"),
      ignored("dali.context.predict.sequence_length", "video frames per context prediction batch: accepted, "
                                                      "not used"),
      // losses: lightning-pose reads them only for losses listed in model.losses_to_use
      only_if("losses.pca_multiview.centering_method", "null accepted", [](const YamlLeaf& leaf) { return leaf.is_null; },
              "lightning-pose centres the keypoints for pca_singleview only; its pca_multiview ignores this key",
              "remove the key (null), or set losses.pca_singleview.centering_method"),
      ignored_section("losses", unsupervised),
      // callbacks: the unsupervised-loss weight annealing (its values are keys of [losses])
      only_if("callbacks.anneal_weight.attr_name", "total_unsupervised_importance accepted",
              [](const YamlLeaf& leaf) { return leaf.value == "total_unsupervised_importance"; },
              "the warm-up applies to the unsupervised losses' weight only",
              "set callbacks.anneal_weight.attr_name=total_unsupervised_importance"),
      ignored_section("callbacks", unsupervised),
      // hydra: Hydra's own output folder settings
      ignored_section("hydra", "Hydra's output folder: accepted, not used (the trainer writes its run folder under "
                               "outputs/, or --output)"),
  };
}

// Whether a lightning-pose name is a dotted YAML path (not a note like "(Lightning
// Trainer precision)").
bool is_yaml_path(const std::string& name) {
  if (name.empty() || name.find_first_of(" ()+") != std::string::npos) return false;
  return name.find('.') != std::string::npos;
}

std::string describe(const YamlLeaf& leaf) { return leaf.is_null ? "null" : leaf.value; }

[[noreturn]] void unknown_key(const YamlLeaf& leaf) {
  std::vector<std::string> candidates;
  for (const auto& key : config_keys()) {
    candidates.push_back(key.full_name());
    for (const auto& alias : key.aliases) candidates.push_back(key.section + "." + alias);
    if (is_yaml_path(key.lightning_pose)) candidates.push_back(key.lightning_pose);
  }
  for (const auto& rule : lp_key_rules()) candidates.push_back(rule.path);
  // The same name under another section (training.backbone -> model.backbone).
  const std::string last = leaf.path.substr(leaf.path.rfind('.') + 1);
  std::string elsewhere;
  for (const auto& c : candidates) {
    if (c.size() > last.size() && c.compare(c.size() - last.size(), last.size(), last) == 0 &&
        c[c.size() - last.size() - 1] == '.')
      elsewhere = c;
  }
  const std::string near = closest(leaf.path, candidates);
  std::string hint = near.empty() ? (elsewhere.empty() ? kDocs : "it belongs at " + elsewhere + " (" + kDocs + ")")
                                  : "did you mean '" + near + "'? (" + kDocs + ")";
  throw UserError(leaf.where + ": unknown key '" + leaf.path + "'", hint);
}

// Whether `path` is a section that holds known keys (training, training.optimizer_params).
bool is_section(const std::string& path) {
  const std::string start = path + ".";
  for (const auto& key : config_keys()) {
    if (key.full_name().rfind(start, 0) == 0 || key.lightning_pose.rfind(start, 0) == 0) return true;
  }
  for (const auto& rule : lp_key_rules())
    if (rule.path.rfind(start, 0) == 0) return true;
  return false;
}

// A leaf under a key that takes one value (training.imgaug.Affine.p).
void refuse_section_under_key(const YamlLeaf& leaf) {
  std::string prefix = leaf.path;
  while (true) {
    const std::size_t dot = prefix.rfind('.');
    if (dot == std::string::npos) return;
    prefix = prefix.substr(0, dot);
    const ConfigKey* key = key_for_yaml_path(prefix);
    const LpKeyRule* rule = find_lp_rule(prefix);
    if (!key && !(rule && !rule->prefix)) continue;
    std::string hint = "give " + prefix + " one value";
    if (key && !key->choices.empty()) hint += ": one of " + join_names(key->choices);
    if (prefix == "training.imgaug") hint += " (custom imgaug pipelines are not supported)";
    throw UserError(leaf.where + ": " + prefix + " takes one value, not a section (found " + leaf.path + ")", hint);
  }
}

}  // namespace

const std::vector<LpKeyRule>& lp_key_rules() {
  static const std::vector<LpKeyRule> rules = build_rules();  // immutable after first use
  return rules;
}

const LpKeyRule* find_lp_rule(const std::string& path) {
  for (const auto& rule : lp_key_rules()) {
    if (rule.path == path) return &rule;
    if (rule.prefix && path.size() > rule.path.size() && path.compare(0, rule.path.size(), rule.path) == 0 &&
        path[rule.path.size()] == '.')
      return &rule;
  }
  return nullptr;
}

const ConfigKey* key_for_yaml_path(const std::string& path) {
  for (const auto& key : config_keys()) {
    if (key.lightning_pose == path) return &key;
  }
  const std::size_t dot = path.find('.');
  if (dot == std::string::npos) return nullptr;
  return find_key(path.substr(0, dot), path.substr(dot + 1));
}

void set_config_key(Config& config, const ConfigKey& key, const std::string& value, const std::string& where) {
  try {
    key.set(config, value);
  } catch (const BadValue& e) {
    const std::string fallback = key.get(Config{});
    throw UserError(where + ": bad value for " + key.full_name() + ": expected " + e.what(),
                    key.full_name() + ": " + key.meaning + " (default: " + (fallback.empty() ? "empty" : fallback) +
                        ")");
  }
}

void apply_yaml_leaves(Config& config, const std::vector<YamlLeaf>& file_leaves, const std::vector<YamlLeaf>& overrides,
                       const EnvLookup& env, std::map<std::string, std::string>& origin,
                       std::vector<std::string>& warnings) {
  // A misspelled override is reported first, as Hydra does, before the file's keys.
  for (const auto& o : overrides) {
    if (key_for_yaml_path(o.path) || find_lp_rule(o.path)) continue;
    refuse_section_under_key(o);
    unknown_key(o);
  }
  // A DeepLabCut project's config.yaml given to train: say what to do with it.
  bool has_scorer = false, has_bodyparts = false;
  for (const auto& leaf : file_leaves) {
    has_scorer = has_scorer || leaf.path == "scorer";
    has_bodyparts = has_bodyparts || leaf.path == "bodyparts";
  }
  if (has_scorer && has_bodyparts) {
    const std::string file = file_leaves.front().where.substr(0, file_leaves.front().where.rfind(':'));
    throw UserError(file + " is a DeepLabCut project's config.yaml, not a training configuration",
                    "import the project first: trainer import --dlc-project <its folder> --out data.h5, then train "
                    "with --data.data_files data.h5");
  }
  std::vector<YamlLeaf> leaves = file_leaves;
  const std::size_t from_file = leaves.size();
  for (const auto& o : overrides) {
    bool replaced = false;
    for (std::size_t i = 0; i < from_file; ++i) {
      if (leaves[i].path == o.path) {
        leaves[i] = o;
        replaced = true;
      }
    }
    if (!replaced) leaves.push_back(o);
  }
  std::map<std::string, const YamlLeaf*> by_path;
  for (const auto& leaf : leaves) by_path[leaf.path] = &leaf;
  const ValueLookup lookup = [&by_path](const std::string& path) -> const std::string* {
    const auto it = by_path.find(path);
    return it == by_path.end() || it->second->is_null ? nullptr : &it->second->value;
  };
  auto resolved = [&](const YamlLeaf& leaf) {
    YamlLeaf out = leaf;
    if (!leaf.is_null) out.value = resolve_interpolations(leaf.value, leaf.path, leaf.where, lookup, env);
    return out;
  };

  std::map<std::string, std::string> set_by_file;  // full key name -> "path at where"
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    const YamlLeaf& leaf = leaves[i];
    const bool from_command_line = i >= from_file || leaf.where.rfind("the command line", 0) == 0;
    if (const ConfigKey* key = key_for_yaml_path(leaf.path)) {
      const std::string full = key->full_name();
      if (leaf.is_nested && key->value_name != "LISTS") {
        throw UserError(leaf.where + ": " + leaf.path + " takes " +
                            (key->value_name == "LIST" ? "a list of plain values" : "one value") + ", got " +
                            leaf.value,
                        full + ": " + key->meaning);
      }
      if (leaf.is_list && key->value_name != "LIST" && key->value_name != "LISTS") {
        std::string hint = full + ": " + key->meaning;
        if (leaf.path == "data.csv_file") hint = "multiview projects (one CSV per view) are not supported; give one CSV";
        throw UserError(leaf.where + ": " + leaf.path + " takes one value, got the list " + leaf.value, hint);
      }
      if (!from_command_line) {
        const auto seen = set_by_file.find(full);
        if (seen != set_by_file.end()) {
          throw UserError(leaf.where + ": " + leaf.path + " sets " + full + ", which " + seen->second + " already set",
                          "keep one of the two");
        }
        set_by_file[full] = leaf.path + " at " + leaf.where;
      }
      origin[full] = leaf.where;
      if (leaf.is_null) {  // lightning-pose's null: the default, which is "take it from the data" where that exists
        set_config_key(config, *key, key->get(Config{}), leaf.where);
        continue;
      }
      set_config_key(config, *key, resolved(leaf).value, leaf.where);
      continue;
    }
    if (const LpKeyRule* rule = find_lp_rule(leaf.path)) {
      if (!rule->check) continue;
      const LpVerdict verdict = rule->check(resolved(leaf));
      if (verdict.kind == LpVerdict::kError) {
        throw UserError(leaf.where + ": " + leaf.path + " = " + describe(leaf) + ": " + verdict.message,
                        verdict.hint);
      }
      if (verdict.kind == LpVerdict::kWarn)
        warnings.push_back(leaf.where + ": " + leaf.path + " = " + describe(leaf) + ": " + verdict.message);
      continue;
    }
    // An empty section (`losses:` or `eval: {}`) sets nothing.
    if ((leaf.is_null || leaf.value == "{}") && is_section(leaf.path)) continue;
    refuse_section_under_key(leaf);
    unknown_key(leaf);
  }
}

std::string config_to_yaml(const Config& config) {
  YAML::Node root(YAML::NodeType::Map);
  for (const auto& key : config_keys()) {
    const std::string path = is_yaml_path(key.lightning_pose) ? key.lightning_pose : key.full_name();
    // Walk/create the nested mappings of the path.
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (true) {
      const std::size_t dot = path.find('.', start);
      parts.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    std::vector<YAML::Node> chain = {root};
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      YAML::Node next = chain.back()[parts[i]];
      if (!next.IsMap()) next = YAML::Node(YAML::NodeType::Map);
      chain.back()[parts[i]] = next;
      chain.push_back(chain.back()[parts[i]]);
    }
    const std::string value = key.get(config);
    if (key.value_name == "LIST") {
      YAML::Node list(YAML::NodeType::Sequence);
      for (const auto& item : parse_list(value)) list.push_back(item);
      list.SetStyle(YAML::EmitterStyle::Flow);
      chain.back()[parts.back()] = list;
    } else {
      chain.back()[parts.back()] = value;
    }
  }
  YAML::Emitter out;
  out.SetIndent(2);
  out << root;
  return std::string(out.c_str()) + "\n";  // yaml-cpp quotes empty strings (""), so they read back
}

}  // namespace trainer::app::config_detail
