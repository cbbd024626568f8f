#pragma once
// lightning-pose's YAML keys, and what the trainer does with each (docs/CONFIG.md,
// "Every lightning-pose key"). A YAML leaf `a.b.c` is, in this order:
//   1. a key of the key table (config_keys.cpp), found by its lightning-pose name
//      (`training.optimizer_params.learning_rate`) or by `<section>.<name>` and its
//      aliases: set with lightning-pose's meaning. Keys other engineers add to the
//      table work from YAML through this step, with no change here;
//   2. a rule of lp_key_rules(): lightning-pose keys with no key of their own (its
//      current ones, the Lightning Trainer settings it passes on, the metadata of its
//      model folders, and the keys of its earlier versions: config_lp_history.cpp),
//      each accepted (with lightning-pose's meaning: e.g. losses.* only matter when the
//      loss is listed in model.losses_to_use; with a one-line note when it changes
//      nothing here), read as the key it was renamed to, or refused with an error
//      naming the key and what to use instead when its value asks for something the
//      trainer cannot do;
//   3. anything else: an error naming the key, with the closest known one.
#include <functional>  // std::function
#include <map>         // std::map
#include <string>      // std::string
#include <vector>      // std::vector

#include "app/config_keys.hpp"  // ConfigKey
#include "app/config_yaml.hpp"  // YamlLeaf, EnvLookup
#include "config/config.hpp"    // Config

namespace trainer::app::config_detail {

// What a rule says about one value.
struct LpVerdict {
  enum Kind { kOk, kWarn, kError } kind = kOk;
  std::string message;  // kWarn / kError: what the trainer will not do
  std::string hint;     // kError: what to use instead
};

struct LpKeyRule {
  std::string path;    // "model.losses_to_use"; with `prefix`, every key below it ("hydra")
  bool prefix = false;
  std::string what;    // what happens to it, one line for docs/CONFIG.md
  // Decides on the (interpolation-resolved) value, seeing the other leaves of the
  // configuration (raw, null and absent alike nullptr); null: always accepted.
  std::function<LpVerdict(const YamlLeaf& leaf, const ValueLookup& others)> check;
  // An old name: the leaf is read as this YAML path, unless the configuration has it too.
  std::string renamed_to;
  // The one value accepted (only_value), written into config.yaml: lightning-pose reads the key.
  std::string written = {};
};

const std::vector<LpKeyRule>& lp_key_rules();
// The rules of keys that earlier lightning-pose versions had (config_lp_history.cpp).
std::vector<LpKeyRule> lp_history_rules();
const LpKeyRule* find_lp_rule(const std::string& path);

// The key-table key a dotted YAML path sets (step 1 above), or nullptr.
const ConfigKey* key_for_yaml_path(const std::string& path);

// Applies the file's leaves, with the overrides merged in (an override of a path
// the file has replaces it; the rest apply after the file, so they win), to
// `config`. `origin` gets where each key-table key was set; `warnings` what was
// accepted but will not happen. Interpolations are resolved against the merged
// leaves. Errors are UserErrors naming the key and where it was set.
void apply_yaml_leaves(Config& config, const std::vector<YamlLeaf>& file_leaves, const std::vector<YamlLeaf>& overrides,
                       const EnvLookup& env, KeyOrigins& origin, std::vector<std::string>& warnings);

// Sets one key-table key from text, turning a malformed value into a UserError
// that names `where` (shared with the INI reader and the command line); the key's
// note on the value, if any, goes to `notes` as one line naming `where`. Both name the
// key as `written_as` (a YAML path) when given, else as <section>.<name>.
void set_config_key(Config& config, const ConfigKey& key, const std::string& value, const std::string& where,
                    std::vector<std::string>* notes = nullptr, const std::string& written_as = {});

// The configuration as YAML in lightning-pose's layout (its nested names where a
// key has one, `<section>.<name>` otherwise); re-parsable with --config.
std::string config_to_yaml(const Config& config);

}  // namespace trainer::app::config_detail
