#pragma once
// The whole of a text file, for tests that check what was written ("" when absent).
#include <fstream>  // std::ifstream
#include <sstream>  // std::ostringstream
#include <string>   // std::string

namespace trainer::testing {

inline std::string read_text_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace trainer::testing
