// INI reader for config files (see config_ini.hpp). It only splits lines into
// sections, keys and values; config_parse.cpp decides what the keys mean.
#include "app/config_ini.hpp"

#include <cctype>   // std::isspace, std::isalnum
#include <cstdio>   // std::snprintf
#include <sstream>  // std::istringstream, std::ostringstream

#include "app/config_values.hpp"  // trim
#include "util/error.hpp"         // UserError

namespace trainer::app::config_detail {
namespace {

// Drops a trailing `# ...` or `; ...` comment that starts the value or follows
// whitespace, outside quotes (so "a#b" and paths like run#3 survive).
std::string strip_comment(const std::string& value) {
  char quote = 0;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const char c = value[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if ((c == '#' || c == ';') && (i == 0 || std::isspace(static_cast<unsigned char>(value[i - 1])))) {
      return value.substr(0, i);
    }
  }
  return value;
}

bool valid_key_text(const std::string& key) {
  if (key.empty()) return false;
  for (char c : key) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') return false;
  }
  return true;
}

// The first control character of a line (NUL, escape, ...; a tab is fine), or -1.
int control_character(const std::string& line) {
  for (unsigned char c : line) {
    if ((c < 0x20 && c != '\t') || c == 0x7f) return c;
  }
  return -1;
}

}  // namespace

std::vector<IniEntry> parse_ini(const std::string& text_in, const std::string& name) {
  std::vector<IniEntry> entries;
  // A UTF-8 byte order mark (Windows editors write one) is not part of the first line.
  const std::string bom = "\xEF\xBB\xBF";
  const std::string text = text_in.compare(0, bom.size(), bom) == 0 ? text_in.substr(bom.size()) : text_in;
  std::istringstream in(text);
  std::string raw;
  std::string section;
  int section_line = 0;
  int line_number = 0;
  while (std::getline(in, raw)) {
    ++line_number;
    const std::string where = name + ":" + std::to_string(line_number);
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();  // files edited on Windows
    // A NUL would cut a value short where it is parsed (0.5\0e-3 read as 0.5).
    if (const int c = control_character(raw); c >= 0) {
      char code[8];
      std::snprintf(code, sizeof code, "\\x%02x", c);
      throw UserError(where + ": control character " + code + " in the line",
                      "config files are plain text; remove the character");
    }
    const std::string line = trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line[0] == '[') {
      const std::string header = trim(strip_comment(line));
      if (header.back() != ']') {
        throw UserError(where + ": section header '" + line + "' lacks its closing ']'",
                        "write a section header as [training]");
      }
      section = trim(header.substr(1, header.size() - 2));
      section_line = line_number;
      if (section.empty()) throw UserError(where + ": empty section name '[]'", "sections: [data] [training] [model] [distributed]");
      IniEntry header_entry;
      header_entry.section = section;
      header_entry.is_header = true;
      header_entry.line = header_entry.section_line = line_number;
      entries.push_back(header_entry);
      continue;
    }
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos) {
      const bool yaml = line.find(':') != std::string::npos;
      throw UserError(where + ": expected 'key = value', got '" + line + "'",
                      yaml ? "this looks like YAML: name the file .yaml (lightning-pose's format), or write "
                             "'key = value' under a [section] header for INI"
                           : "write one 'key = value' per line under a [section] header");
    }
    IniEntry entry;
    entry.section = section;
    entry.key = trim(line.substr(0, eq));
    entry.value = trim(strip_comment(line.substr(eq + 1)));
    entry.line = line_number;
    entry.section_line = section_line;
    if (!valid_key_text(entry.key)) {
      throw UserError(where + ": '" + entry.key + "' is not a valid key name",
                      "keys are written like train_batch_size = 16");
    }
    entries.push_back(entry);
  }
  return entries;
}

}  // namespace trainer::app::config_detail
