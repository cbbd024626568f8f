#pragma once
// The shared command line of train/plan/predict (and any subcommand that wants
// the configuration): `--config FILE`, every key as `--<section>.<key> VALUE`,
// shortcuts --backend --accelerator --devices, --print-config, --help, plus the
// subcommand's own options. Precedence: defaults <- config file <- command line.
#include <string>  // std::string
#include <vector>  // std::vector

#include <boost/program_options.hpp>  // options_description, variables_map

#include "app/commands.hpp"  // Args
#include "config/config.hpp"    // Config

namespace trainer::app {

struct CommandLine {
  Config config;                               // defaults <- --config file <- command line, validated
  boost::program_options::variables_map own;   // values of the subcommand's own options (notified)
  bool help = false;          // --help or --print-config given: the text was already printed to stdout
                              // (by the job's first rank only); the caller returns 0
  bool print_config = false;  // it was --print-config (help is also true)
  bool yaml = false;          // the config file was YAML (lightning-pose's format): --print-config writes YAML
  std::vector<std::string> warnings;  // lightning-pose keys accepted whose effect the trainer does not have yet
};

// Configuration text that stands in for a missing --config file (predict: the
// configuration a checkpoint carries); `name` is what error messages call it.
struct FallbackConfig {
  std::string text;
  std::string name;
};

// Parses the arguments after the subcommand name. Unknown keys, malformed values
// and impossible combinations are UserErrors (exit code 2) naming the key and
// file:line or the command-line option, with a hint (e.g. the closest valid key).
// Without --config, `fallback` (if given) is read as if it were the config file.
// Whether a first argument is taken as the config file (lightning-pose's `litpose train
// config.yaml`): a name ending in .yaml or .yml (either case), not an option.
bool is_positional_config(const std::string& arg);

CommandLine parse_command_line(const std::string& subcommand, const Args& args,
                               const boost::program_options::options_description& own_options,
                               const FallbackConfig* fallback = nullptr);

// The arguments among `args` that change the configuration, in order: --section.key
// VALUE (and the shortcuts) and --overrides KEY=VALUE...; a subcommand's own options
// are left out. For reading another configuration file with the user's changes.
Args configuration_args(const std::string& subcommand, const Args& args);
// `args` with `overrides` at the front of its one --overrides list (a new list when it
// has none): Boost takes --overrides once, and the user's overrides of the same keys,
// after these, win.
Args with_leading_overrides(const Args& args, const std::vector<std::string>& overrides);

// The configuration as INI text in the format --config reads (for --print-config
// and for saving the effective configuration next to a run); re-parsable.
std::string config_to_ini(const Config& config);
// The same as YAML in lightning-pose's layout (--print-config after a YAML config).
std::string config_to_yaml(const Config& config);

}  // namespace trainer::app
