#pragma once
// One CSV cell: quoted (with doubled quotes) only when it holds a comma, a quote or
// a newline, as pandas and Python's csv module write and read it. Frame paths and
// keypoint names go through it in every CSV the trainer writes.
#include <string>  // std::string

namespace trainer {

inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace trainer
