#pragma once
// Reading and writing single configuration values as text, the same way for the
// INI file and the command line, plus the "did you mean" helper for hints.
// A malformed value throws BadValue with what was expected; the caller adds the
// key name and where the value came from (file:line or the command line).
#include <cstdint>    // std::uint64_t
#include <stdexcept>  // std::runtime_error
#include <string>     // std::string
#include <utility>    // std::move
#include <vector>     // std::vector

namespace trainer::app::config_detail {

// A value that cannot be read; what() says what was expected instead.
struct BadValue : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A well-formed value the trainer refuses by name (a lightning-pose backbone it does
// not have): what() is the whole reason, `hint` what to use instead.
struct RefusedValue : std::runtime_error {
  RefusedValue(const std::string& reason, std::string hint_text)
      : std::runtime_error(reason), hint(std::move(hint_text)) {}
  std::string hint;
};

std::string trim(const std::string& text);
// Removes one pair of matching surrounding quotes ("..." or '...').
std::string unquote(const std::string& text);

long long parse_integer(const std::string& text);  // whole string, decimal
std::uint64_t parse_unsigned(const std::string& text);
double parse_real(const std::string& text);          // finite numbers only
bool parse_bool(const std::string& text);            // true/false, yes/no, on/off, 1/0
// `a, b, c` or `[a, b, c]`; elements may be quoted; empty text or `[]` is the empty list.
std::vector<std::string> parse_list(const std::string& text);

// The shortest decimal text that reads back as the same double.
std::string format_real(double value);
std::string format_bool(bool value);
// `[a, b]` form, quoting elements that would not read back unquoted.
std::string format_list(const std::vector<std::string>& items);

// Levenshtein distance, for suggesting the closest valid key.
std::size_t edit_distance(const std::string& a, const std::string& b);
// The candidate closest to `word`, or "" when none is close enough to be a plausible typo.
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace trainer::app::config_detail
