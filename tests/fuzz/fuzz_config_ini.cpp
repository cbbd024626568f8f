// libFuzzer harness: the INI config file parser and the key table behind
// `trainer train --config FILE` (app/config_ini.cpp, config_parse.cpp,
// config_keys.cpp, config_values.cpp, config_validate.cpp). An accepted file must
// also survive the round trip of --print-config: config_to_ini() of the result
// parses back to the same configuration.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint8_t

#include "app/config_parse.hpp"           // config_to_ini
#include "fuzz_config_round_trip.hpp"     // check_config_round_trip

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  trainer::fuzz::check_config_round_trip(data, size, ".cfg",
                                         [](const trainer::Config& c) { return trainer::app::config_to_ini(c); });
  return 0;
}
