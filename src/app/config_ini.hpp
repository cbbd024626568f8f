#pragma once
// The INI syntax of config files, without knowing the keys:
//   # comment            ; comment
//   [section]
//   key = value          # trailing comment (after whitespace, outside quotes)
// Syntax errors are UserErrors naming file:line.
#include <string>  // std::string
#include <vector>  // std::vector

namespace trainer::app::config_detail {

// One `key = value` line, or a `[section]` header line (is_header, key empty).
struct IniEntry {
  std::string section;  // "" before the first [section] header
  bool is_header = false;
  std::string key;
  std::string value;    // trimmed, trailing comment removed, quotes kept
  int line = 0;         // 1-based
  int section_line = 0; // line of the [section] header (0: none)
};

// Parses INI text; `name` is used for file:line in messages (the file is read by
// read_config_text, config_yaml.hpp, which also tells INI from YAML).
std::vector<IniEntry> parse_ini(const std::string& text, const std::string& name);

}  // namespace trainer::app::config_detail
