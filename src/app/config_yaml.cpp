// YAML reader for config files (see config_yaml.hpp). yaml-cpp parses; this file
// turns the tree into dotted leaves and keeps file:line for every one of them.
#include "app/config_yaml.hpp"

#include <yaml-cpp/yaml.h>  // YAML::Load, Node, Emitter, ParserException

#include <cctype>      // std::isspace
#include <cstdint>     // std::uint32_t
#include <set>         // std::set
#include <sstream>     // std::ostringstream

#include "app/config_values.hpp"  // format_list, trim
#include "util/error.hpp"         // UserError
#include "util/input_file.hpp"    // read_input_file

namespace trainer::app::config_detail {
namespace {

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

std::string at(const std::string& name, const YAML::Mark& mark) {
  return mark.is_null() ? name : name + ":" + std::to_string(mark.line + 1);
}

std::string flow_text(const YAML::Node& node) {
  YAML::Emitter out;
  out.SetMapFormat(YAML::Flow);
  out.SetSeqFormat(YAML::Flow);
  out << node;
  return out.c_str();
}

// A list of scalars as format_list text; anything deeper is kept as flow text.
void fill_sequence(const YAML::Node& node, YamlLeaf& leaf) {
  leaf.is_list = true;
  std::vector<std::string> items;
  for (const auto& item : node) {
    if (!item.IsScalar() && !item.IsNull()) {
      leaf.is_nested = true;
      leaf.value = flow_text(node);
      return;
    }
    items.push_back(item.IsNull() ? "null" : item.Scalar());
  }
  leaf.value = format_list(items);
}

void flatten(const YAML::Node& node, const std::string& prefix, const std::string& name,
             std::vector<YamlLeaf>& leaves) {
  std::set<std::string> seen;
  for (const auto& entry : node) {
    const YAML::Node& key = entry.first;
    const YAML::Node& value = entry.second;
    if (!key.IsScalar()) {
      throw UserError(at(name, key.Mark()) + ": a key must be a plain name, got " + flow_text(key),
                      "write keys like `max_epochs: 300`");
    }
    const std::string path = prefix.empty() ? key.Scalar() : prefix + "." + key.Scalar();
    if (!seen.insert(key.Scalar()).second) {
      throw UserError(at(name, key.Mark()) + ": " + path + " is set twice in the same section",
                      "keep one of the two lines");
    }
    if (value.IsMap() && value.size() > 0) {
      flatten(value, path, name, leaves);
      continue;
    }
    YamlLeaf leaf;
    leaf.path = path;
    leaf.where = at(name, key.Mark());
    if (value.IsNull()) {
      leaf.is_null = true;
    } else if (value.IsScalar()) {
      leaf.value = value.Scalar();
    } else if (value.IsSequence()) {
      fill_sequence(value, leaf);
    } else {  // an empty mapping {}
      leaf.is_nested = true;
      leaf.value = "{}";
    }
    leaves.push_back(leaf);
  }
}

// The 1-based line of the first byte that is not UTF-8 (YAML text is Unicode; yaml-cpp
// would pass such bytes on, and write them back changed), or 0.
int first_invalid_utf8_line(const std::string& text) {
  int line = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') ++line;
    int extra = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : -1;
    if (extra < 0 || (extra == 1 && c < 0xC2) || i + extra >= text.size() + (extra ? 0 : 1)) return line;
    std::uint32_t code = extra == 0 ? c : c & (0x3F >> extra);
    for (int k = 1; k <= extra; ++k) {
      const auto d = static_cast<unsigned char>(text[i + static_cast<std::size_t>(k)]);
      if ((d & 0xC0) != 0x80) return line;
      code = (code << 6) | (d & 0x3F);
    }
    // Overlong forms, surrogates and code points above U+10FFFF.
    if ((extra == 2 && code < 0x800) || (extra == 3 && (code < 0x10000 || code > 0x10FFFF)) ||
        (code >= 0xD800 && code <= 0xDFFF))
      return line;
    i += static_cast<std::size_t>(extra) + 1;
  }
  return 0;
}

// Whether the quoted scalar starting at text[start] (its quote) has its closing quote.
bool quote_is_closed(const std::string& text, std::size_t start) {
  const char quote = text[start];
  for (std::size_t i = start + 1; i < text.size(); ++i) {
    if (quote == '"' && text[i] == '\\') {
      ++i;  // an escaped character, \" included
    } else if (text[i] == quote) {
      if (quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'') ++i;  // '' is an escaped '
      else return true;
    }
  }
  return false;
}

// yaml-cpp takes a quoted scalar that is never closed (`name: "abc` at the end of the
// file) as if it were: every quoted scalar of the tree must end in its quote.
void require_closed_quotes(const YAML::Node& node, const std::string& text, const std::string& name) {
  if (node.IsScalar()) {
    const YAML::Mark mark = node.Mark();
    const std::size_t pos = mark.is_null() || mark.pos < 0 ? text.size() : static_cast<std::size_t>(mark.pos);
    const bool quoted = node.Tag() == "!" && pos < text.size() && (text[pos] == '"' || text[pos] == '\'');
    if (quoted && !quote_is_closed(text, pos))
      throw UserError(at(name, mark) + ": not valid YAML: the quoted value that starts here is never closed",
                      std::string("end it with ") + text[pos]);
    return;
  }
  if (node.IsMap()) {
    for (const auto& entry : node) {
      require_closed_quotes(entry.first, text, name);
      require_closed_quotes(entry.second, text, name);
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) require_closed_quotes(item, text, name);
  }
}

YAML::Node load(const std::string& text, const std::string& name) {
  if (const int line = first_invalid_utf8_line(text)) {
    throw UserError(name + (name.rfind("the command line", 0) == 0 ? "" : ":" + std::to_string(line)) +
                        ": not valid YAML: the text is not UTF-8",
                    "save the file as UTF-8");
  }
  try {
    YAML::Node root = YAML::Load(text);
    require_closed_quotes(root, text, name);
    return root;
  } catch (const YAML::ParserException& e) {
    throw UserError(at(name, e.mark) + ": not valid YAML: " + e.msg,
                    "check the indentation and the `key: value` syntax near that line");
  } catch (const YAML::Exception& e) {
    throw UserError(name + ": not valid YAML: " + e.msg);
  }
}

}  // namespace

bool is_yaml_config(const std::string& path, const std::string& text) {
  const std::string name = lower(path);
  if (ends_with(name, ".yaml") || ends_with(name, ".yml")) return true;
  if (ends_with(name, ".cfg") || ends_with(name, ".ini")) return false;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#' || t[0] == ';' || t == "---") continue;
    if (t[0] == '[') return false;
    const std::size_t colon = t.find(':'), eq = t.find('=');
    return colon != std::string::npos && (eq == std::string::npos || colon < eq);
  }
  return false;
}

std::string read_config_text(const std::string& path) {
  // Only regular files (a FIFO would block until a writer comes, forever), and at most
  // 256 MiB: util/input_file.hpp, the gate of every user-named input.
  std::string text = read_input_file(path, "cannot read config file '" + path + "'", std::size_t{256} << 20,
                                     "check the path; example configs are in inputs/ (e.g. --config inputs/demo.cfg)");
  // An HDF5 file (ours carry a checksum line first, in the user block) given as the
  // configuration: say what it is, not which line fails to parse.
  if (text.rfind("TRAINER-CHECKSUM", 0) == 0 || text.rfind("\x89HDF\r\n\x1a\n", 0) == 0)
    throw UserError("'" + path + "' is an HDF5 file (a data set or a checkpoint), not a configuration",
                    "a data set goes in --data.data_files " + path + ", a checkpoint in --resume or --init-weights; "
                    "--config takes a lightning-pose YAML or an INI file");
  return text;
}

std::vector<YamlLeaf> parse_yaml_leaves(const std::string& text, const std::string& name) {
  // NUL and other control characters: YAML forbids them, and yaml-cpp's message
  // would not say which line.
  int line = 1;
  for (unsigned char c : text) {
    if (c == '\n') ++line;
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
      throw UserError(name + ":" + std::to_string(line) + ": control character in the line",
                      "config files are plain text; remove the character");
    }
  }
  const YAML::Node root = load(text, name);
  std::vector<YamlLeaf> leaves;
  if (root.IsNull()) return leaves;  // an empty file: every default
  if (!root.IsMap()) {
    throw UserError(at(name, root.Mark()) + ": the top level of a YAML config must be sections like `data:` and "
                    "`training:`",
                    "see lightning-pose's config_default.yaml or docs/CONFIG.md");
  }
  flatten(root, "", name, leaves);
  return leaves;
}

YamlLeaf parse_override(const std::string& text_in) {
  std::string text = text_in;
  const std::string where = "the command line (--overrides " + text_in + ")";
  if (text.rfind("++", 0) == 0) text = text.substr(2);
  else if (text.rfind("+", 0) == 0) text = text.substr(1);
  if (text.rfind("~", 0) == 0) {
    throw UserError(where + ": deleting a key (~key) is not supported",
                    "set the key to its default instead, e.g. key=null");
  }
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw UserError(where + ": an override is written key=value, e.g. training.max_epochs=10",
                    "dotted lightning-pose names, as litpose train config.yaml --overrides takes them");
  }
  YamlLeaf leaf;
  leaf.path = trim(text.substr(0, eq));
  leaf.where = where;
  for (char c : leaf.path) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') {
      throw UserError(where + ": '" + leaf.path + "' is not a key name", "write e.g. training.max_epochs=10");
    }
  }
  const std::string value = text.substr(eq + 1);
  if (trim(value).empty()) {
    leaf.is_null = true;
    return leaf;
  }
  const YAML::Node node = load(value, where);
  if (node.IsNull()) {
    leaf.is_null = true;
  } else if (node.IsScalar()) {
    leaf.value = node.Scalar();
  } else if (node.IsSequence()) {
    fill_sequence(node, leaf);
  } else {
    leaf.is_nested = true;
    leaf.value = flow_text(node);
  }
  return leaf;
}

std::string resolve_interpolations(const std::string& value, const std::string& key, const std::string& where,
                                   const ValueLookup& lookup, const EnvLookup& env_lookup) {
  std::size_t pos = 0;
  int depth = 0;
  std::string text = value;
  while (true) {
    const std::size_t start = text.find("${", pos);
    if (start == std::string::npos) break;
    const std::size_t end = text.find('}', start);
    if (end == std::string::npos) {
      throw UserError(where + ": " + key + " has an unclosed ${ in '" + value + "'", "write ${data.data_dir}");
    }
    const std::string inner = text.substr(start + 2, end - start - 2);
    std::string replacement;
    if (inner.rfind("oc.env:", 0) == 0) {
      const std::string args = inner.substr(7);
      const std::size_t comma = args.find(',');
      const std::string name = trim(args.substr(0, comma));
      const char* found = env_lookup(name);
      if (found) {
        replacement = found;
      } else if (comma != std::string::npos) {
        replacement = trim(args.substr(comma + 1));
      } else {
        throw UserError(where + ": " + key + " reads the environment variable " + name + ", which is not set",
                        "set it, or override the key: --overrides " + key + "=VALUE");
      }
    } else if (inner.find(':') != std::string::npos) {
      const std::string resolver = inner.substr(0, inner.find(':'));
      std::string hint = "write the value itself, or override it: --overrides " + key + "=VALUE";
      if (resolver == "LP_ROOT_PATH")
        hint = "${LP_ROOT_PATH:} is the folder of a lightning-pose installation; give the path itself: "
               "--overrides " + key + "=/path/to/data";
      throw UserError(where + ": " + key + " uses the resolver ${" + inner + "}, which the trainer does not have",
                      hint);
    } else {
      const std::string* target = lookup(trim(inner));
      if (!target) {
        throw UserError(where + ": " + key + " refers to ${" + inner + "}, which is not set in the configuration",
                        "refer to a key of the same file, e.g. ${data.data_dir}");
      }
      replacement = *target;
    }
    text = text.substr(0, start) + replacement + text.substr(end + 1);
    pos = start;  // the replacement may hold another ${...}
    if (++depth > 32) {
      throw UserError(where + ": " + key + " has interpolations that refer to each other in a loop ('" + value + "')");
    }
  }
  return text;
}

}  // namespace trainer::app::config_detail
