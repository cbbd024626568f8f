#pragma once
// The YAML syntax of config files (lightning-pose's own config.yaml), without
// knowing the keys: nested mappings become dotted leaf paths
// (`training.optimizer_params.learning_rate`), a list of scalars stays one leaf,
// `~`/`null` is kept as null. Hydra-style overrides `a.b=value` are parsed here too,
// and OmegaConf interpolations `${a.b}` / `${oc.env:NAME}` are resolved on request.
// What the paths mean is config_lp_keys.cpp's job. Syntax errors are UserErrors
// naming file:line.
#include <functional>  // std::function
#include <string>      // std::string
#include <vector>      // std::vector

namespace trainer::app::config_detail {

struct YamlLeaf {
  std::string path;       // "training.max_epochs"
  std::string value;      // a scalar as written (quotes removed); a list as "[a, b]" (format_list)
  bool is_null = false;   // ~, null, or an empty value
  bool is_list = false;
  bool is_nested = false; // a list holding lists or mappings (value is its flow text)
  std::string where;      // "config.yaml:12" or "the command line (--overrides a.b=1)"
};

// Whether the config file is YAML rather than INI: a .yaml/.yml name, or (any
// name) text whose first meaningful line is `key:` rather than `[section]` or `key =`.
bool is_yaml_config(const std::string& path, const std::string& text);

// Reads the whole file (regular files only) into text; errors are UserErrors.
std::string read_config_text(const std::string& path);

// Every leaf of the YAML text, in document order; `name` is used in messages.
// The top level must be a mapping; duplicate keys are an error.
std::vector<YamlLeaf> parse_yaml_leaves(const std::string& text, const std::string& name);

// One Hydra override `a.b=value` (also `+a.b=value`, `++a.b=value`); the value is
// read as YAML (`null`, `[1, 2]`, `'quoted'`).
YamlLeaf parse_override(const std::string& text);

// Replaces each `${...}` in `value`: `${a.b}` by `lookup("a.b")` (nullptr: unknown
// key), `${oc.env:NAME}` / `${oc.env:NAME,default}` by the environment variable
// (through `env_lookup`); anything else (lightning-pose's `${LP_ROOT_PATH:}`,
// Hydra's `${now:...}`) is a UserError naming `where` and the key.
using ValueLookup = std::function<const std::string*(const std::string& path)>;
using EnvLookup = std::function<const char*(const std::string& name)>;
std::string resolve_interpolations(const std::string& value, const std::string& key, const std::string& where,
                                   const ValueLookup& lookup, const EnvLookup& env_lookup);

}  // namespace trainer::app::config_detail
