// libFuzzer harness: the YAML config reader behind `trainer train config.yaml`
// (app/config_yaml.cpp: yaml-cpp, leaves, interpolations; config_lp_keys.cpp: the
// lightning-pose key rules and the key table). An accepted file must also survive the
// round trip of --print-config: config_to_yaml() of the result parses back to the same
// configuration.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint8_t

#include <boost/program_options.hpp>  // options_description

#include "app/config_parse.hpp"  // parse_command_line, config_to_ini, config_to_yaml
#include "fuzz_support.hpp"      // ScratchFile, expect_user_errors_only

namespace {

trainer::app::CommandLine parse_file(const std::string& path) {
  const boost::program_options::options_description no_own_options;
  return trainer::app::parse_command_line("train", {"--config", path}, no_own_options);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using trainer::fuzz::ScratchFile;
  static const ScratchFile input(".yaml");
  static const ScratchFile printed(".printed.yaml");
  input.write(data, size);
  trainer::fuzz::expect_user_errors_only([&] {
    const trainer::app::CommandLine parsed = parse_file(input.path());
    trainer::Config config = parsed.config;
    config.source_description.clear();
    const std::string yaml = trainer::app::config_to_yaml(config);
    printed.write(yaml.data(), yaml.size());
    trainer::app::CommandLine again;
    try {
      again = parse_file(printed.path());
    } catch (const trainer::UserError& e) {
      ScratchFile::finding(std::string("--print-config output is rejected: ") + e.what() + "\n" + yaml);
    }
    again.config.source_description.clear();
    if (trainer::app::config_to_ini(again.config) != trainer::app::config_to_ini(config))
      ScratchFile::finding("--print-config output reads back differently:\n" + yaml);
  });
  return 0;
}
