#pragma once
// The configuration a command continues a checkpoint with when the command line gives
// none (`predict --checkpoint`, `train --resume`): the run's config.ini beside the
// checkpoint's folder, else the configuration the checkpoint stores; never the
// defaults, which would predict or train the synthetic demo data with a real model.
#include <string>  // std::string

#include "app/commands.hpp"      // Args
#include "app/config_parse.hpp"  // FallbackConfig

namespace trainer::app {

// Whether `args` name a configuration: --config, or a config file as the first argument
// (`trainer train config.yaml`, `trainer predict config.yaml`: is_positional_config).
bool names_configuration(const Args& args);

// Inserts --config <run>/config.ini at the front of `args` when that file exists; else,
// when `read_checkpoint` (not for --help), fills `stored` with the checkpoint's own
// configuration (read it with parse_command_line(..., &stored)). Returns the line to
// log ("configuration: ...", or empty). UserError when the checkpoint carries none either.
std::string use_checkpoint_configuration(Args& args, const std::string& checkpoint, FallbackConfig& stored,
                                         bool read_checkpoint = true);

}  // namespace trainer::app
