// parse_command_line and config_to_ini (see config_parse.hpp). The key table in
// config_keys.cpp drives everything here: options, help text, INI output.
#include "app/config_parse.hpp"

#include <algorithm>  // std::find
#include <iostream>   // std::cout, std::cerr
#include <map>       // std::map
#include <sstream>   // std::ostringstream

#include "app/config_ini.hpp"     // parse_ini, IniEntry
#include "app/config_keys.hpp"    // config_keys, find_key, validate_combinations
#include "app/config_lp_keys.hpp" // apply_yaml_leaves, config_to_yaml, set_config_key
#include "app/config_yaml.hpp"    // read_config_text, is_yaml_config, parse_yaml_leaves, parse_override
#include "app/config_values.hpp"  // BadValue, closest, trim
#include "util/env.hpp"        // Env: the launcher's rank variables
#include "util/error.hpp"         // UserError

namespace po = boost::program_options;

namespace trainer::app {

bool is_positional_config(const std::string& arg) {
  if (arg.rfind("-", 0) == 0) return false;
  const auto ends = [&arg](const std::string& t) {
    return arg.size() > t.size() && arg.compare(arg.size() - t.size(), t.size(), t) == 0;
  };
  return ends(".yaml") || ends(".yml") || ends(".YAML") || ends(".YML");
}
namespace {

using config_detail::BadValue;
using config_detail::ConfigKey;
using config_detail::config_keys;
using config_detail::config_sections;
using config_detail::find_key;

// --backend, --accelerator and --devices stand for their [distributed] keys.
const std::map<std::string, std::string>& shortcuts() {
  static const std::map<std::string, std::string> map = {
      {"backend", "distributed.backend"},
      {"accelerator", "distributed.accelerator"},
      {"devices", "distributed.devices"},
  };
  return map;
}

// Under mpirun/srun every rank parses the same command line; only the first prints
// help and --print-config, so the text appears once. The launcher's environment is
// read because MPI may not be initialized yet when arguments are parsed.
bool prints_for_the_job(const Env& env) {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const auto value = env_get(env, name)) return *value == "0";
  }
  return true;
}

const ConfigKey* key_by_full_name(const std::string& full_name) {
  const std::size_t dot = full_name.find('.');
  if (dot == std::string::npos) return nullptr;
  return find_key(full_name.substr(0, dot), full_name.substr(dot + 1));
}

std::string help_hint(const std::string& subcommand) {
  return "run `trainer " + subcommand + " --help` for every option and key, or see docs/CONFIG.md";
}

// All option spellings the parser accepts, for "did you mean" hints.
std::vector<std::string> option_names(const std::vector<const po::options_description*>& groups) {
  std::vector<std::string> names;
  for (const auto* group : groups) {
    for (const auto& option : group->options()) names.push_back("--" + option->long_name());
  }
  return names;
}

struct Layout {
  po::options_description common{"common options", 110, 55};
  std::vector<po::options_description> sections;
};

void build_layout(Layout& layout) {
  const Config defaults;
  layout.common.add_options()
      ("config", po::value<std::string>()->value_name("FILE"),
       "config file: lightning-pose's YAML (.yaml/.yml) or INI ([data] [training] [model] [distributed] [eval] [losses]); "
       "also accepted as the first argument (trainer train config.yaml); command-line keys override it")
      ("overrides", po::value<std::vector<std::string>>()->multitoken()->value_name("KEY=VALUE..."),
       "Hydra-style overrides with dotted lightning-pose names, e.g. --overrides training.max_epochs=10 "
       "model.backbone=resnet18 (values are YAML: null, [1, 2])")
      ("print-config", "print the effective configuration (YAML when the config file was YAML, else INI; "
       "reusable with --config) and exit")
      ("backend", po::value<std::string>()->value_name("NAME"), "same as --distributed.backend")
      ("accelerator", po::value<std::string>()->value_name("NAME"), "same as --distributed.accelerator")
      ("devices", po::value<std::string>()->value_name("DEVICES"), "same as --distributed.devices")
      ("help,h", "print this help and exit");
  for (const auto& section : config_sections()) {
    po::options_description group("[" + section + "] keys (config file or --" + section + ".<key> VALUE)", 110, 55);
    for (const auto& key : config_keys()) {
      if (key.section != section) continue;
      std::string text = key.meaning + " (default: " + (key.get(defaults).empty() ? "empty" : key.get(defaults)) + ")";
      if (!key.lightning_pose.empty()) text += " [lightning-pose: " + key.lightning_pose + "]";
      group.add_options()(key.full_name().c_str(), po::value<std::string>()->value_name(key.value_name), text.c_str());
    }
    layout.sections.push_back(group);
  }
}

// A configuration key given on the command line, as typed (without the dashes).
struct KeyArg {
  std::string name;
  std::string value;
};

// Takes `--section.key VALUE`, `--section.key=VALUE` and the shortcuts out of the
// arguments; the rest (the subcommand's own options, --config, --help) goes to
// Boost. Doing this by hand lets values start with '-' (max_steps -1) or be empty
// (`--data.data_files=` clears a list).
Args take_key_args(const Args& args, const std::string& subcommand, std::vector<KeyArg>& keys) {
  Args rest;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const std::size_t eq = arg.find('=');
    const std::string name = arg.rfind("--", 0) == 0 ? arg.substr(2, eq == std::string::npos ? eq : eq - 2) : "";
    if (name.empty() || (!key_by_full_name(name) && !shortcuts().count(name))) {
      rest.push_back(arg);
    } else if (eq != std::string::npos) {
      keys.push_back({name, arg.substr(eq + 1)});
    } else if (i + 1 < args.size()) {
      keys.push_back({name, args[++i]});
    } else {
      throw UserError(subcommand + ": option --" + name + " needs a value (command line)",
                      "write --" + name + " VALUE or --" + name + "=VALUE; " + help_hint(subcommand));
    }
  }
  return rest;
}

void set_key(Config& config, const ConfigKey& key, const std::string& value, const std::string& where,
             std::vector<std::string>& notes) {
  config_detail::set_config_key(config, key, value, where, &notes);
}

// `entries` come from the INI text called `path` (a file, or a checkpoint's configuration).
void apply_entries(Config& config, const std::vector<config_detail::IniEntry>& entries, const std::string& path,
                   const std::string& subcommand, config_detail::KeyOrigins& origin, std::vector<std::string>& notes) {
  std::map<std::string, int> first_line;
  const auto& sections = config_sections();
  for (const auto& entry : entries) {
    const std::string where = path + ":" + std::to_string(entry.line);
    if (entry.section.empty()) {
      std::string hint = "put keys under a section header: [data] [training] [model] [distributed]";
      for (const auto& section : config_sections()) {
        if (find_key(section, entry.key)) hint = "put '" + entry.key + "' under the [" + section + "] header";
      }
      throw UserError(where + ": key '" + entry.key + "' comes before any [section] header", hint);
    }
    if (std::find(sections.begin(), sections.end(), entry.section) == sections.end()) {
      const std::string near = config_detail::closest(entry.section, sections);
      throw UserError(path + ":" + std::to_string(entry.section_line) + ": unknown section [" + entry.section + "]",
                      near.empty() ? "sections are [data] [training] [model] [distributed]"
                                   : "did you mean [" + near + "]?");
    }
    if (entry.is_header) continue;
    const ConfigKey* key = find_key(entry.section, entry.key);
    if (!key) {
      std::string hint;
      for (const auto& section : sections) {
        if (find_key(section, entry.key)) hint = "'" + entry.key + "' belongs in section [" + section + "]";
      }
      if (hint.empty()) {
        std::vector<std::string> candidates;
        for (const auto& k : config_keys()) {
          if (k.section != entry.section) continue;
          candidates.push_back(k.name);
          for (const auto& alias : k.aliases) candidates.push_back(alias);
        }
        const std::string near = config_detail::closest(entry.key, candidates);
        hint = near.empty() ? help_hint(subcommand) : "did you mean '" + near + "'? (" + help_hint(subcommand) + ")";
      }
      throw UserError(where + ": unknown key '" + entry.key + "' in section [" + entry.section + "]", hint);
    }
    const std::string full = key->full_name();
    if (first_line.count(full)) {
      throw UserError(where + ": " + full + " is set twice (first at " + path + ":" +
                          std::to_string(first_line[full]) + ")",
                      "keep one of the two lines");
    }
    first_line[full] = entry.line;
    set_key(config, *key, entry.value, where, notes);
    origin[full] = {where, entry.section + "." + entry.key};
  }
}

void print_help(const std::string& subcommand, const po::options_description& own, const Layout& layout) {
  std::cout << "usage: trainer " << subcommand << " [config.yaml] [options]\n";
  if (subcommand == "predict")  // the form of litpose predict (app/predict_inputs.hpp)
    std::cout << "       trainer predict RUN_DIR VIDEO|FOLDER|LABELS.csv... [--skip_viz] [--overwrite] "
                 "[--batch_size N] [options]\n"
              << "         (a run folder or lightning-pose model directory, as litpose predict: labeled videos "
                 "unless --skip_viz;\n          inputs whose prediction file exists are skipped unless "
                 "--overwrite; --batch_size: frames per batch)\n";
  std::cout
            << "Configuration: defaults <- --config FILE (lightning-pose YAML or INI) <- --overrides a.b=VALUE ... <-\n"
            << "  --<section>.<key> VALUE (the command line wins).\n"
            << "Lists are written a, b or [a, b]. Every key is explained in docs/CONFIG.md.\n\n";
  if (!own.options().empty()) std::cout << own << "\n";
  std::cout << layout.common << "\n";
  for (const auto& group : layout.sections) std::cout << group << "\n";
}

}  // namespace

Args configuration_args(const std::string& subcommand, const Args& args) {
  std::vector<KeyArg> keys;
  const Args rest = take_key_args(args, subcommand, keys);
  Args out;
  for (const auto& key : keys) out.push_back("--" + key.name + "=" + key.value);
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (rest[i].rfind("--overrides=", 0) == 0) {
      out.push_back(rest[i]);
    } else if (rest[i] == "--overrides") {
      out.push_back(rest[i]);
      while (i + 1 < rest.size() && rest[i + 1].rfind("-", 0) != 0) out.push_back(rest[++i]);
    }
  }
  return out;
}

Args with_leading_overrides(const Args& args, const std::vector<std::string>& overrides) {
  if (overrides.empty()) return args;
  Args out;
  bool merged = false;
  for (const auto& arg : args) {
    if (merged || (arg != "--overrides" && arg.rfind("--overrides=", 0) != 0)) {
      out.push_back(arg);
      continue;
    }
    out.push_back("--overrides");
    out.insert(out.end(), overrides.begin(), overrides.end());
    if (arg != "--overrides") out.push_back(arg.substr(std::string("--overrides=").size()));
    merged = true;
  }
  if (!merged) {
    out.push_back("--overrides");
    out.insert(out.end(), overrides.begin(), overrides.end());
  }
  return out;
}

CommandLine parse_command_line(const std::string& subcommand, const Args& args,
                               const po::options_description& own_options, const FallbackConfig* fallback) {
  Layout layout;
  build_layout(layout);
  po::options_description everything;  // what Boost parses; configuration keys are taken out first
  everything.add(own_options).add(layout.common);

  CommandLine result;
  std::vector<KeyArg> key_args;
  Args rest = take_key_args(args, subcommand, key_args);
  // lightning-pose's form, `litpose train config.yaml --overrides ...`: a YAML file
  // as the first argument is the config file.
  std::string positional_config;
  if (!rest.empty() && is_positional_config(rest.front())) {
    positional_config = rest.front();
    rest.erase(rest.begin());
  }
  const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
  try {
    const po::parsed_options parsed = po::command_line_parser(rest).options(everything).style(style).run();
    for (const auto& option : parsed.options) {
      if (option.position_key >= 0 || option.string_key.empty()) {
        const std::string stray = option.original_tokens.empty() ? option.string_key : option.original_tokens.front();
        throw UserError(subcommand + ": unexpected argument '" + stray + "' on the command line",
                        "options are written --name VALUE; " + help_hint(subcommand));
      }
    }
    po::store(parsed, result.own);
  } catch (const po::unknown_option& e) {
    std::vector<const po::options_description*> groups = {&own_options, &layout.common};
    for (const auto& group : layout.sections) groups.push_back(&group);
    const std::string name = e.get_option_name();
    const std::string bare = name.substr(0, name.find('='));
    // litpose train's own option, brought along by habit.
    if (subcommand == "train" && (bare == "--output_dir" || bare == "--output-dir"))
      throw UserError("train: unknown option '" + bare + "' (litpose train's) on the command line",
                      "the run folder is --out DIR (default outputs/<date>/<time>)");
    const std::string near = config_detail::closest(bare, option_names(groups));
    throw UserError(subcommand + ": unknown option '" + bare + "' on the command line",
                    near.empty() ? help_hint(subcommand) : "did you mean '" + near + "'? (" + help_hint(subcommand) + ")");
  } catch (const po::too_many_positional_options_error&) {
    std::string stray;
    for (const auto& arg : rest) {
      if (arg.rfind("-", 0) != 0) {
        stray = arg;
        break;
      }
    }
    throw UserError(subcommand + ": unexpected argument '" + stray + "' on the command line",
                    "options are written --name VALUE; " + help_hint(subcommand));
  } catch (const po::error& e) {
    throw UserError(subcommand + ": " + std::string(e.what()) + " (command line)", help_hint(subcommand));
  }

  if (result.own.count("help")) {
    if (prints_for_the_job(capture_environment())) print_help(subcommand, own_options, layout);
    result.help = true;
    return result;
  }
  try {
    po::notify(result.own);
  } catch (const po::error& e) {
    throw UserError(subcommand + ": " + std::string(e.what()) + " (command line)", help_hint(subcommand));
  }

  if (!positional_config.empty() && result.own.count("config")) {
    throw UserError(subcommand + ": two config files: " + positional_config + " and --config " +
                        result.own["config"].as<std::string>(),
                    "give one of them");
  }
  std::vector<config_detail::YamlLeaf> overrides;
  if (result.own.count("overrides")) {
    for (const auto& text : result.own["overrides"].as<std::vector<std::string>>())
      overrides.push_back(config_detail::parse_override(text));
  }
  const Env env = capture_environment();
  const config_detail::EnvLookup env_lookup = [&env](const std::string& name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  config_detail::KeyOrigins origin;
  std::string source = "defaults";
  const std::string config_path =
      !positional_config.empty() ? positional_config
                                 : result.own.count("config") ? result.own["config"].as<std::string>() : "";
  bool overrides_applied = false;
  if (!config_path.empty()) {
    source = config_path;
    const std::string text = config_detail::read_config_text(config_path);
    if (config_detail::is_yaml_config(config_path, text)) {
      result.yaml = true;
      config_detail::apply_yaml_leaves(result.config, config_detail::parse_yaml_leaves(text, config_path), overrides,
                                       env_lookup, origin, result.warnings);
      overrides_applied = true;
    } else {
      apply_entries(result.config, config_detail::parse_ini(text, config_path), config_path, subcommand, origin,
                    result.warnings);
    }
  } else if (fallback) {
    source = fallback->name;
    apply_entries(result.config, config_detail::parse_ini(fallback->text, source), source, subcommand, origin,
                  result.warnings);
  }

  if (!overrides_applied && !overrides.empty())
    config_detail::apply_yaml_leaves(result.config, {}, overrides, env_lookup, origin, result.warnings);
  if (!overrides.empty()) source += " + overrides";

  // Command-line keys, in the order given; each may be set once (counting shortcuts and aliases).
  std::map<std::string, std::string> given_as;
  for (const auto& arg : key_args) {
    const auto shortcut = shortcuts().find(arg.name);
    const ConfigKey* key = key_by_full_name(shortcut != shortcuts().end() ? shortcut->second : arg.name);
    const std::string full = key->full_name();
    if (given_as.count(full)) {
      throw UserError(subcommand + ": " + full + " is given twice on the command line (as --" + given_as[full] +
                          " and --" + arg.name + ")",
                      "give it once");
    }
    given_as[full] = arg.name;
    const std::string where = "the command line (--" + arg.name + ")";
    set_key(result.config, *key, arg.value, where, result.warnings);
    origin[full] = {where, shortcut != shortcuts().end() ? full : arg.name};
  }
  if (!given_as.empty()) source += " + command line";
  result.config.source_description = source;

  // A key left at its default is named as the configuration's own layout would write it.
  const bool yaml = result.yaml;
  config_detail::validate_combinations(result.config, [&origin, yaml](const std::string& full_name) {
    const auto it = origin.find(full_name);
    if (it != origin.end()) return it->second;
    const ConfigKey* key = key_by_full_name(full_name);
    // lightning_pose holds a YAML path, or a description in parentheses for keys
    // lightning-pose sets elsewhere (DDPStrategy's backend): name those the INI way.
    const bool yaml_path = key && !key->lightning_pose.empty() && key->lightning_pose.front() != '(';
    return config_detail::KeyOrigin{"the default", yaml && yaml_path ? key->lightning_pose : full_name};
  });

  // What training will not do concerns `train` only (predict and plan share the config).
  if (subcommand == "train" && prints_for_the_job(env)) {
    for (const auto& warning : result.warnings) std::cerr << "warning: " << warning << "\n";
  }
  if (result.own.count("print-config")) {
    if (prints_for_the_job(env))
      std::cout << (result.yaml ? config_to_yaml(result.config) : config_to_ini(result.config));
    result.help = true;
    result.print_config = true;
  }
  return result;
}

std::string config_to_yaml(const Config& config) {
  std::string header = "# trainer configuration";
  if (!config.source_description.empty()) header += " (from " + config.source_description + ")";
  header += "\n# lightning-pose's layout; use it with: trainer train --config FILE.yaml (docs/CONFIG.md)\n";
  return header + config_detail::config_to_yaml(config);
}

std::string config_to_ini(const Config& config) {
  std::ostringstream os;
  os << "# trainer configuration";
  if (!config.source_description.empty()) os << " (from " << config.source_description << ")";
  os << "\n# Use it with: trainer train --config FILE. Every key is explained in docs/CONFIG.md.\n";
  for (const auto& section : config_sections()) {
    os << "\n[" << section << "]\n";
    for (const auto& key : config_keys()) {
      if (key.section != section) continue;
      std::string value = key.get(config);
      const bool is_list = key.value_name == "LIST";
      const bool needs_quotes = !is_list && (value.find_first_of("#;\"'") != std::string::npos ||
                                             config_detail::trim(value) != value);
      if (needs_quotes) value = (value.find('"') == std::string::npos ? "\"" + value + "\"" : "'" + value + "'");
      os << key.name << " =" << (value.empty() ? "" : " " + value) << "\n";
    }
  }
  return os.str();
}

}  // namespace trainer::app
