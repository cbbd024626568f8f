#pragma once
// The kinds of rule a lightning-pose key without a key-table key can have (see
// config_lp_keys.hpp), so that each rule in config_lp_keys.cpp and
// config_lp_history.cpp is one readable line: accepted, accepted with a note,
// accepted for some values and refused by name for the others, or renamed.
#include <functional>  // std::function
#include <string>      // std::string

#include "app/config_lp_keys.hpp"  // LpKeyRule, LpVerdict
#include "app/config_yaml.hpp"     // YamlLeaf, ValueLookup

namespace trainer::app::config_detail {

// Whether a value is acceptable, given the other leaves of the configuration.
using LpValueTest = std::function<bool(const YamlLeaf& leaf, const ValueLookup& others)>;

// Accepted, no effect, silently (docs/CONFIG.md says why).
LpKeyRule ignored(const char* path, const char* what);
// The same for every key below `path` ("hydra", "eval.fiftyone").
LpKeyRule ignored_section(const char* path, const char* what);
// Accepted when null or when `ok` holds; otherwise an error naming the key, `refusal`
// and `hint`.
LpKeyRule only_if(const char* path, const char* what, LpValueTest ok, std::string refusal, std::string hint);
// Accepted when null or exactly `value`, the one value the trainer implements, which
// config.yaml then carries (lightning-pose needs the key); otherwise an error.
LpKeyRule only_value(const char* path, const char* value, const char* what, std::string refusal, std::string hint);
// Accepted always; a one-line note `note` when the value is not null and `ok` fails.
LpKeyRule note_unless(const char* path, const char* what, LpValueTest ok, std::string note);
// Lightning-pose's old name of a key-table key: read as `new_path`, unless the
// configuration also has `new_path` (lightning-pose keeps the new one then).
LpKeyRule renamed(const char* path, const char* new_path, const char* what);

// Value tests.
bool never(const YamlLeaf&, const ValueLookup&);
bool is_false(const YamlLeaf& leaf, const ValueLookup&);
bool is_true(const YamlLeaf& leaf, const ValueLookup&);
// The value is a number equal to `number` (1, 1.0, 1e0 for 1).
LpValueTest equals_number(double number);

}  // namespace trainer::app::config_detail
