// The rule kinds of config_lp_rules.hpp.
#include "app/config_lp_rules.hpp"

#include <utility>  // std::move

#include "app/config_values.hpp"  // BadValue, parse_bool, parse_real

namespace trainer::app::config_detail {

LpKeyRule ignored(const char* path, const char* what) { return {path, false, what, nullptr, ""}; }

LpKeyRule ignored_section(const char* path, const char* what) { return {path, true, what, nullptr, ""}; }

LpKeyRule only_if(const char* path, const char* what, LpValueTest ok, std::string refusal, std::string hint) {
  return {path, false, what,
          [ok = std::move(ok), refusal = std::move(refusal), hint = std::move(hint)](const YamlLeaf& leaf,
                                                                                    const ValueLookup& others) {
            if (leaf.is_null || ok(leaf, others)) return LpVerdict{};
            return LpVerdict{LpVerdict::kError, refusal, hint};
          },
          ""};
}

LpKeyRule only_value(const char* path, const char* value, const char* what, std::string refusal, std::string hint) {
  LpKeyRule rule = only_if(
      path, what, [value = std::string(value)](const YamlLeaf& leaf, const ValueLookup&) { return leaf.value == value; },
      std::move(refusal), std::move(hint));
  rule.written = value;
  return rule;
}

LpKeyRule note_unless(const char* path, const char* what, LpValueTest ok, std::string note) {
  return {path, false, what,
          [ok = std::move(ok), note = std::move(note)](const YamlLeaf& leaf, const ValueLookup& others) {
            if (leaf.is_null || ok(leaf, others)) return LpVerdict{};
            return LpVerdict{LpVerdict::kWarn, note, ""};
          },
          ""};
}

LpKeyRule renamed(const char* path, const char* new_path, const char* what) {
  return {path, false, what, nullptr, new_path};
}

bool never(const YamlLeaf&, const ValueLookup&) { return false; }

bool is_false(const YamlLeaf& leaf, const ValueLookup&) {
  try {
    return !leaf.is_list && !parse_bool(leaf.value);
  } catch (const BadValue&) {
    return false;
  }
}

bool is_true(const YamlLeaf& leaf, const ValueLookup&) {
  try {
    return !leaf.is_list && parse_bool(leaf.value);
  } catch (const BadValue&) {
    return false;
  }
}

LpValueTest equals_number(double number) {
  return [number](const YamlLeaf& leaf, const ValueLookup&) {
    if (leaf.is_list) return false;
    try {
      return parse_real(leaf.value) == number;
    } catch (const BadValue&) {
      return false;
    }
  };
}

}  // namespace trainer::app::config_detail
