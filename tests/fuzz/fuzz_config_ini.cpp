// libFuzzer harness: the INI config file parser and the key table behind
// `trainer train --config FILE` (app/config_ini.cpp, config_parse.cpp,
// config_keys.cpp, config_values.cpp, config_validate.cpp). An accepted file must
// also survive the round trip of --print-config: config_to_ini() of the result
// parses back to the same configuration.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint8_t

#include <boost/program_options.hpp>  // options_description

#include "app/config_parse.hpp"  // parse_command_line, config_to_ini
#include "fuzz_support.hpp"      // ScratchFile, expect_user_errors_only

namespace {

trainer::app::CommandLine parse_file(const std::string& path) {
  const boost::program_options::options_description no_own_options;
  return trainer::app::parse_command_line("train", {"--config", path}, no_own_options);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using trainer::fuzz::ScratchFile;
  static const ScratchFile input(".cfg");
  static const ScratchFile printed(".printed.cfg");
  input.write(data, size);
  trainer::fuzz::expect_user_errors_only([&] {
    const trainer::app::CommandLine parsed = parse_file(input.path());
    // Without the header comment (it names the source file), the printed config must
    // read back to the same text.
    trainer::Config config = parsed.config;
    config.source_description.clear();
    const std::string ini = trainer::app::config_to_ini(config);
    printed.write(ini.data(), ini.size());
    trainer::app::CommandLine again;
    try {
      again = parse_file(printed.path());
    } catch (const trainer::UserError& e) {
      ScratchFile::finding(std::string("--print-config output is rejected: ") + e.what() + "\n" + ini);
    }
    again.config.source_description.clear();
    if (trainer::app::config_to_ini(again.config) != ini)
      ScratchFile::finding("--print-config output reads back differently:\n" + ini);
  });
  return 0;
}
