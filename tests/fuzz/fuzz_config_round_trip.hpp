#pragma once
// The config harnesses' one check (fuzz_config_ini.cpp, fuzz_config_yaml.cpp): the
// input, as a config file, goes through `trainer train --config FILE`'s parser; an
// accepted file, printed back by --print-config's writer for its format, must parse
// again, to the same configuration (compared as INI text: every key and value).
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint8_t
#include <string>   // std::string

#include <boost/program_options.hpp>  // options_description

#include "app/config_parse.hpp"  // parse_command_line, config_to_ini
#include "fuzz_support.hpp"      // ScratchFile, expect_user_errors_only

namespace trainer::fuzz {

inline app::CommandLine parse_config_file(const std::string& path) {
  const boost::program_options::options_description no_own_options;
  return app::parse_command_line("train", {"--config", path}, no_own_options);
}

// `suffix`: the format's file suffix (".cfg", ".yaml"), which selects its reader;
// `print`: its writer (Config -> text).
template <class Print>
void check_config_round_trip(const std::uint8_t* data, std::size_t size, const std::string& suffix, Print print) {
  static const ScratchFile input(suffix);
  static const ScratchFile printed(".printed" + suffix);
  input.write(data, size);
  expect_user_errors_only([&] {
    // Without the header comment (it names the source file), the printed config must
    // read back to the same text.
    Config config = parse_config_file(input.path()).config;
    config.source_description.clear();
    const std::string text = print(config);
    printed.write(text.data(), text.size());
    app::CommandLine again;
    try {
      again = parse_config_file(printed.path());
    } catch (const UserError& e) {
      ScratchFile::finding(std::string("--print-config output is rejected: ") + e.what() + "\n" + text);
    }
    again.config.source_description.clear();
    if (app::config_to_ini(again.config) != app::config_to_ini(config))
      ScratchFile::finding("--print-config output reads back differently:\n" + text);
  });
}

}  // namespace trainer::fuzz
