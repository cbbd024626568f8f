// libFuzzer harness: the YAML config reader behind `trainer train config.yaml`
// (app/config_yaml.cpp: yaml-cpp, leaves, interpolations; config_lp_keys.cpp: the
// lightning-pose key rules and the key table). An accepted file must also survive the
// round trip of --print-config: config_to_yaml() of the result parses back to the same
// configuration.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint8_t

#include "app/config_parse.hpp"           // config_to_yaml
#include "fuzz_config_round_trip.hpp"     // check_config_round_trip

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  trainer::fuzz::check_config_round_trip(data, size, ".yaml",
                                         [](const trainer::Config& c) { return trainer::app::config_to_yaml(c); });
  return 0;
}
