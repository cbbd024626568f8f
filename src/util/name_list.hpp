#pragma once
// The names of one configuration choice, spelled for messages and help. The layer
// that implements a choice exports its names once (e.g. data::imgaug_names()); the
// config key table, --help texts and error messages all print them through here, so
// a new name lands in one place.
#include <string>  // std::string
#include <vector>  // std::vector

namespace trainer {

// "a, b, c" with `separator` between the names; the empty name shows as "(empty)",
// as the config's --help and docs/CONFIG.md write it.
inline std::string join_names(const std::vector<std::string>& names, const std::string& separator = ", ") {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) out += separator;
    out += names[i].empty() ? std::string("(empty)") : names[i];
  }
  return out;
}

}  // namespace trainer
