#pragma once
// The table of configuration keys: one entry per Config field, with its section,
// its name in the INI file and on the command line (`--<section>.<name>`), its
// lightning-pose YAML equivalent, and how to read, check and print its value.
// Adding a Config field means adding one line to the table in config_keys.cpp;
// help, --print-config, the INI reader and docs checks all follow from it.
#include <functional>  // std::function
#include <map>         // std::map
#include <string>      // std::string
#include <vector>      // std::vector

#include "config/config.hpp"  // Config

namespace trainer::app::config_detail {

struct ConfigKey {
  std::string section;                 // "training"
  std::string name;                    // "train_batch_size"
  std::string value_name;              // INT, REAL, BOOL, NAME, TEXT, LIST, PATH...
  std::string meaning;                 // one line for --help and docs
  std::string lightning_pose;          // YAML key in lightning-pose, or "" when trainer-only; a dotted
                                       // path here is what a lightning-pose YAML config sets the key
                                       // with (config_lp_keys.cpp), besides <section>.<name>
  std::vector<std::string> aliases;    // other accepted spellings, e.g. "image_resize_dims.height"
  // What a lightning-pose YAML `null` sets, as its code reads the null (empty: the
  // default, e.g. "take it from the data"): val_prob's "null" (half the rest, as
  // split_sizes_from_probabilities), uniform_heatmaps_for_nan_keypoints' "false".
  std::string null_means;
  std::vector<std::string> choices;    // NAME keys: the accepted names, as their owning layer exports them
  // Reads `text` into the config; throws BadValue("<what was expected>") on bad input.
  std::function<void(Config&, const std::string& text)> set;
  // The value as text that `set` reads back unchanged.
  std::function<std::string(const Config&)> get;
  // Optional: a one-line note on a value that `set` accepted but changed (an
  // eval.colormap the renderer lacks), or "" when there is nothing to say.
  std::function<std::string(const std::string& text)> note;

  std::string full_name() const { return section + "." + name; }
};

const std::vector<ConfigKey>& config_keys();
const std::vector<std::string>& config_sections();  // in file order: data, training, model, distributed, eval

// The key named `name` (or one of its aliases) in `section`, or nullptr.
const ConfigKey* find_key(const std::string& section, const std::string& name);

// Where a key's value came from, for error messages: `where` is "inputs/x.cfg:12",
// "the command line (--training.val_prob)" or "the default"; `written_as` is the key
// as the user wrote it there (a lightning-pose YAML path such as
// training.lr_scheduler_params.multisteplr.milestones, or <section>.<name>).
struct KeyOrigin {
  std::string where;
  std::string written_as;
};
// Keyed by <section>.<name>; a key absent here kept its default.
using KeyOrigins = std::map<std::string, KeyOrigin>;
using OriginOf = std::function<KeyOrigin(const std::string& full_name)>;

// Checks combinations of keys that are each valid alone but impossible together.
// Throws UserError naming the keys and where they were set.
void validate_combinations(const Config& config, const OriginOf& origin_of);

}  // namespace trainer::app::config_detail
