#pragma once
// Text from the user (paths, config values, CSV cells) is echoed into error lines.
// printable() makes such text safe to print on a terminal as one line: control
// characters (newline, escape, NUL, DEL ...) become visible escapes like \x1b, so
// input can neither split an `error:` line nor send terminal escape sequences.
// Bytes of 0x80 and above pass unchanged (UTF-8 names stay readable).
#include <cstdio>  // std::snprintf
#include <string>  // std::string

namespace trainer {

inline std::string printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\x%02x", c);
      out += escape;
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace trainer
