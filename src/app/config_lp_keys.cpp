// lightning-pose's YAML keys and their fate (see config_lp_keys.hpp).
#include "app/config_lp_keys.hpp"

#include <yaml-cpp/yaml.h>  // YAML::Emitter, for config_to_yaml

#include <filesystem>  // std::filesystem::path: a DeepLabCut config.yaml's folder
#include <set>      // std::set
#include <utility>  // std::move

#include "app/config_lp_rules.hpp"  // ignored, only_if, note_unless, renamed, ...
#include "app/config_values.hpp"    // BadValue, closest, format_list, parse_list
#include "util/error.hpp"         // UserError
#include "util/name_list.hpp"     // join_names

namespace trainer::app::config_detail {
namespace {

const std::string kDocs = "docs/CONFIG.md lists every lightning-pose key and what happens to it";

std::vector<LpKeyRule> build_rules() {
  const char* unsupervised = "used only by the unsupervised losses listed in model.losses_to_use";
  const char* multiview = "multiview projects (one label file per camera) are not supported";
  const char* one_view = "train one view per run with data.csv_file set to that view's CSV";
  std::vector<LpKeyRule> rules = {
      // data
      only_if("data.view_names", "multiview projects: refused unless null", never, multiview, one_view),
      only_if("data.bbox_file", "multiview bounding boxes: refused unless null", never,
              "bounding-box files are not supported", "remove data.bbox_file"),
      only_if("data.camera_params_file", "multiview camera calibration: refused unless null", never,
              std::string("camera calibration is for multiview projects; ") + multiview,
              std::string("remove data.camera_params_file (null) and ") + one_view),
      // lightning-pose reads it (utils/io.py) for label CSVs without the scorer row.
      only_if("data.header_rows", "[0, 1, 2] accepted; other header rows refused",
              [](const YamlLeaf& leaf, const ValueLookup&) { return leaf.value == format_list({"0", "1", "2"}); },
              "label CSVs are read with DeepLabCut's three header rows (scorer, bodyparts, coords) only",
              "give the CSV those three header rows and remove data.header_rows"),
      // lightning-pose's ModelConfig renames it for models made by its app (its issue #268).
      renamed("data.keypoints", "data.keypoint_names", "old name of data.keypoint_names (lightning-pose app models)"),
      // training
      only_if("training.imgaug_3d", "multiview 3D augmentation: false accepted, true refused", is_false,
              "multiview 3D augmentation is not supported", "set training.imgaug_3d=false"),
      only_value("training.lr_scheduler", "multisteplr",
                 "multisteplr accepted (training.lr_scheduler_milestones / gamma), others refused",
                 "only multisteplr is supported",
                 "set training.lr_scheduler=multisteplr (milestones and gamma under lr_scheduler_params.multisteplr)"),
      ignored("training.dropout_rate", "not read by lightning-pose's heatmap models either: accepted, not used"),
      only_if("training.unfreezing_step", "step-based schedule: refused", never,
              "step-based schedules are not supported", "use training.unfreezing_epoch"),
      only_if("training.min_steps", "step-based schedule: refused", never, "step-based schedules are not supported",
              "use training.min_epochs (training.max_steps is supported)"),
      only_if("training.lr_scheduler_params.multisteplr.milestone_steps", "step-based schedule: refused", never,
              "step-based schedules are not supported",
              "use training.lr_scheduler_params.multisteplr.milestones (epochs)"),
      ignored_section("training.patch_mask", "multiview transformer patch masking: accepted, not used"),
      // training: the Lightning Trainer arguments lightning-pose's train.py passes on
      // (accumulate_grad_batches, val_check_interval and limit_train_batches are keys of
      // the key table, with Lightning's meaning)
      note_unless("training.profiler", "Lightning's profiler: accepted, no effect", never,
                  "the trainer has no Lightning profiler; accepted, no effect (`trainer bench step` times a step)"),
      // model
      // Written by lightning-pose's train() into a model folder's config.yaml.
      ignored("model.lightning_pose_version", "model folder metadata: accepted, not used"),
      ignored("creation_datetime", "model folder metadata: accepted, not used"),
      // models/factory.py reads it (default true: download the backbone's pretrained weights).
      only_if("model.backbone_pretrained", "true accepted; false accepted unless model.backbone_weights is set",
              [](const YamlLeaf& leaf, const ValueLookup& others) {
                return is_true(leaf, others) || !others("model.backbone_weights");
              },
              "false asks for random initial weights, but model.backbone_weights names a file",
              "remove one of model.backbone_pretrained and model.backbone_weights"),
      ignored("model.head", "multiview transformer head: accepted, not used"),
      // losses: lightning-pose reads them only for losses listed in model.losses_to_use
      only_if("losses.pca_multiview.centering_method", "null accepted", never,
              "lightning-pose centres the keypoints for pca_singleview only; its pca_multiview ignores this key",
              "remove the key (null), or set losses.pca_singleview.centering_method"),
  };
  for (auto& rule : lp_history_rules()) rules.push_back(std::move(rule));
  // Whole sections last: a specific rule above wins over them.
  rules.push_back(ignored_section("losses", unsupervised));
  // callbacks: the unsupervised-loss weight annealing (its values are keys of [losses])
  rules.push_back(only_value("callbacks.anneal_weight.attr_name", "total_unsupervised_importance",
                             "total_unsupervised_importance accepted",
                             "the warm-up applies to the unsupervised losses' weight only",
                             "set callbacks.anneal_weight.attr_name=total_unsupervised_importance"));
  rules.push_back(ignored_section("callbacks", unsupervised));
  // hydra: Hydra's own output folder settings
  rules.push_back(ignored_section("hydra", "Hydra's output folder: accepted, not used (the trainer writes its run "
                                           "folder under outputs/, or --output)"));
  return rules;
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

void set_config_key(Config& config, const ConfigKey& key, const std::string& value, const std::string& where,
                    std::vector<std::string>* notes, const std::string& written_as) {
  // Messages name the key as the user wrote it: a YAML path (data.image_resize_dims.height)
  // is not the INI name (data.image_resize_height) a lightning-pose user never typed.
  const std::string name = written_as.empty() ? key.full_name() : written_as;
  try {
    key.set(config, value);
    if (notes && key.note) {
      const std::string note = key.note(value);
      if (!note.empty()) notes->push_back(where + ": " + name + " = " + trim(value) + ": " + note);
    }
  } catch (const RefusedValue& e) {
    throw UserError(where + ": " + name + ": " + e.what(), e.hint);
  } catch (const BadValue& e) {
    const std::string fallback = key.get(Config{});
    throw UserError(where + ": bad value for " + name + ": expected " + e.what(),
                    name + ": " + key.meaning + " (default: " + (fallback.empty() ? "empty" : fallback) + ")");
  }
}

void apply_yaml_leaves(Config& config, const std::vector<YamlLeaf>& file_leaves, const std::vector<YamlLeaf>& overrides,
                       const EnvLookup& env, KeyOrigins& origin, std::vector<std::string>& warnings) {
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
    std::string folder = std::filesystem::path(file).parent_path().string();
    if (folder.empty()) folder = ".";
    throw UserError(file + " is a DeepLabCut project's config.yaml, not a training configuration",
                    "import the project first: trainer import --dlc-project " + folder +
                        " --out data.h5, then train with --data.data_files data.h5");
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
  // Old names are read as their new ones, unless the new one is there too (then, as
  // in lightning-pose, the old one is left alone).
  std::set<std::string> paths;
  for (const auto& leaf : leaves) paths.insert(leaf.path);
  for (auto& leaf : leaves) {
    const LpKeyRule* rule = find_lp_rule(leaf.path);
    if (rule && !rule->renamed_to.empty() && !paths.count(rule->renamed_to)) leaf.path = rule->renamed_to;
  }
  std::map<std::string, const YamlLeaf*> by_path;
  for (const auto& leaf : leaves) by_path[leaf.path] = &leaf;
  const ValueLookup lookup = [&by_path](const std::string& path) -> const std::string* {
    const auto it = by_path.find(path);
    return it == by_path.end() || it->second->is_null ? nullptr : &it->second->value;
  };
  auto resolved = [&](const YamlLeaf& leaf) {
    YamlLeaf out = leaf;
    if (leaf.is_null) return out;
    // OmegaConf: a value that is one interpolation of a null key is null
    // (eval.test_videos_directory: ${data.video_dir} with data.video_dir: null).
    std::string target = trim(leaf.value);
    for (int depth = 0; depth < 32 && target.size() > 3 && target.compare(0, 2, "${") == 0 && target.back() == '}' &&
                        target.find_first_of("${}:", 2) == target.size() - 1;
         ++depth) {
      const auto it = by_path.find(trim(target.substr(2, target.size() - 3)));
      if (it == by_path.end()) break;
      if (it->second->is_null) {
        out.is_null = true;
        return out;
      }
      target = trim(it->second->value);
    }
    out.value = resolve_interpolations(leaf.value, leaf.path, leaf.where, lookup, env);
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
      origin[full] = {leaf.where, leaf.path};
      const YamlLeaf value = resolved(leaf);
      if (value.is_null) {  // lightning-pose's null: what its code makes of None, else the default
        set_config_key(config, *key, key->null_means.empty() ? key->get(Config{}) : key->null_means, leaf.where,
                       nullptr, leaf.path);
        continue;
      }
      set_config_key(config, *key, value.value, leaf.where, &warnings, leaf.path);
      continue;
    }
    if (const LpKeyRule* rule = find_lp_rule(leaf.path)) {
      if (!rule->check) continue;
      const LpVerdict verdict = rule->check(resolved(leaf), lookup);
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

namespace {

// Whether `text` reads back as a YAML number (300, 1e-3, -1), so it is written plain.
bool is_number(const std::string& text) {
  try {
    parse_real(text);
    return true;
  } catch (const BadValue&) {
    return false;
  }
}

// One list item or scalar: a number plain, anything else a string, tagged "!" (YAML's
// non-specific tag of a quoted scalar) for emit() to quote where it would read back as
// another type (a keypoint named "null", a model_name "1").
YAML::Node scalar(const std::string& text, bool numeric) {
  YAML::Node node(text);
  if (!numeric || !is_number(text)) node.SetTag("!");
  return node;
}

// Whether a plain scalar `text` reads back as a number, boolean or null (YAML 1.1,
// which yaml-cpp and PyYAML read).
bool reads_as_other_type(const std::string& text) {
  static const std::set<std::string> words = {"null", "Null", "NULL", "~",     "true", "True", "TRUE", "false",
                                              "False", "FALSE", "yes", "Yes",  "YES",  "no",   "No",   "NO",
                                              "on",   "On",   "ON",   "off",   "Off",  "OFF",  "y",    "n"};
  return text.empty() || words.count(text) || is_number(text);
}

void emit(YAML::Emitter& out, const YAML::Node& node) {
  if (node.IsMap()) {
    out << YAML::BeginMap;
    for (const auto& entry : node) {
      out << YAML::Key << entry.first.Scalar() << YAML::Value;
      emit(out, entry.second);
    }
    out << YAML::EndMap;
  } else if (node.IsSequence()) {
    out << (node.Style() == YAML::EmitterStyle::Flow ? YAML::Flow : YAML::Block) << YAML::BeginSeq;
    for (const auto& item : node) emit(out, item);
    out << YAML::EndSeq;
  } else if (node.IsNull()) {
    out << YAML::Null;
  } else if (node.Tag() == "!" && reads_as_other_type(node.Scalar())) {
    out << YAML::DoubleQuoted << node.Scalar();
  } else {
    out << node.Scalar();
  }
}

// A key's value as the YAML type lightning-pose writes it: numbers, booleans, null,
// sequences (of numbers or names), sequences of sequences; text stays a string.
YAML::Node yaml_value(const ConfigKey& key, const std::string& value) {
  const std::string& type = key.value_name;
  const bool nullable = type.find("null") != std::string::npos;
  if (nullable && value == "null") return YAML::Node(YAML::NodeType::Null);
  if (type == "BOOL") return YAML::Node(format_bool(parse_bool(value)));  // plain true / false
  if (type == "INT" || type == "REAL" || nullable || type == "COUNT/FRACTION") return scalar(value, true);
  if (type == "LIST" || type == "LISTS") {
    // Lists of numbers (milestones, epsilon per keypoint) stay numbers, and names names.
    // Our list syntax is looser than YAML's ("a, b", or a name such as "n}ll" that
    // YAML refuses): what YAML cannot read is written like a one-item list, as itself.
    YAML::Node parsed;
    try {
      parsed = YAML::Load(value.empty() ? "[]" : value);
    } catch (const YAML::Exception&) {
      parsed = YAML::Node();
    }
    YAML::Node list(YAML::NodeType::Sequence);
    if (!parsed.IsSequence()) {  // real_list writes one number as itself
      return scalar(value, true);
    }
    const std::vector<std::string> items = parse_list(value);
    if (type == "LISTS") {
      for (const auto& inner : parsed) {
        YAML::Node row(YAML::NodeType::Sequence);
        for (const auto& item : inner) row.push_back(scalar(item.Scalar(), true));
        row.SetStyle(YAML::EmitterStyle::Flow);
        list.push_back(row);
      }
    } else {
      bool all_numbers = true;
      for (const auto& item : items) all_numbers = all_numbers && is_number(item);
      for (const auto& item : items) list.push_back(scalar(item, all_numbers));
    }
    list.SetStyle(YAML::EmitterStyle::Flow);
    return list;
  }
  return scalar(value, false);
}

}  // namespace

std::string config_to_yaml(const Config& config) {
  YAML::Node root(YAML::NodeType::Map);
  // Sets `value` at a dotted path, making the nested mappings on the way.
  const auto set_path = [&root](const std::string& path, const YAML::Node& value) {
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
    chain.back()[parts.back()] = value;
  };
  for (const auto& key : config_keys())
    set_path(is_yaml_path(key.lightning_pose) ? key.lightning_pose : key.full_name(), yaml_value(key, key.get(config)));
  // The keys whose one accepted value lightning-pose still reads (callbacks.anneal_weight
  // is passed whole to its AnnealWeight, which needs attr_name).
  for (const auto& rule : lp_key_rules())
    if (!rule.written.empty()) set_path(rule.path, YAML::Node(rule.written));
  YAML::Emitter out;
  out.SetIndent(2);
  out.SetNullFormat(YAML::LowerNull);  // `null`, as lightning-pose's files write it
  emit(out, root);
  return std::string(out.c_str()) + "\n";
}

}  // namespace trainer::app::config_detail
