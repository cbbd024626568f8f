// Text <-> value conversions for configuration keys. Strict on purpose: "16x",
// "1e3" for an integer or "nan" are errors, not silently truncated numbers.
#include "app/config_values.hpp"

#include <algorithm>  // std::min
#include <cctype>     // std::isspace, std::tolower
#include <cerrno>     // errno, ERANGE
#include <cmath>      // std::isfinite
#include <cstdio>     // std::snprintf
#include <cstdlib>    // std::strtoll, std::strtoull, std::strtod

namespace trainer::app::config_detail {

std::string trim(const std::string& text) {
  std::size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return text.substr(begin, end - begin);
}

std::string unquote(const std::string& text) {
  if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') && text.back() == text.front()) {
    return text.substr(1, text.size() - 2);
  }
  return text;
}

long long parse_integer(const std::string& raw) {
  const std::string text = unquote(trim(raw));
  if (text.empty()) throw BadValue("a whole number, got an empty value");
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0') throw BadValue("a whole number, got '" + text + "'");
  if (errno == ERANGE) throw BadValue("a whole number in range, got '" + text + "'");
  return value;
}

std::uint64_t parse_unsigned(const std::string& raw) {
  const std::string text = unquote(trim(raw));
  if (text.empty()) throw BadValue("a non-negative whole number, got an empty value");
  if (text[0] == '-') throw BadValue("a non-negative whole number, got '" + text + "'");
  errno = 0;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (*end != '\0') throw BadValue("a non-negative whole number, got '" + text + "'");
  if (errno == ERANGE) throw BadValue("a whole number below 2^64, got '" + text + "'");
  return value;
}

double parse_real(const std::string& raw) {
  const std::string text = unquote(trim(raw));
  if (text.empty()) throw BadValue("a number, got an empty value");
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (*end != '\0' || !std::isfinite(value) || errno == ERANGE) throw BadValue("a number, got '" + text + "'");
  return value;
}

bool parse_bool(const std::string& raw) {
  std::string text = unquote(trim(raw));
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (text == "true" || text == "yes" || text == "on" || text == "1") return true;
  if (text == "false" || text == "no" || text == "off" || text == "0") return false;
  throw BadValue("true or false, got '" + trim(raw) + "'");
}

std::vector<std::string> parse_list(const std::string& raw) {
  std::string text = trim(raw);
  if (!text.empty() && text.front() == '[') {
    if (text.back() != ']') throw BadValue("a list like [a, b], got '" + text + "' (missing ']')");
    text = trim(text.substr(1, text.size() - 2));
  } else if (!text.empty() && text.back() == ']') {
    throw BadValue("a list like [a, b], got '" + text + "' (missing '[')");
  }
  std::vector<std::string> items;
  if (text.empty()) return items;
  // Split on commas outside quotes, so a quoted path may contain one.
  std::string current;
  char quote = 0;
  for (char c : text) {
    if (quote) {
      if (c == quote) quote = 0;
      current += c;
    } else if (c == '"' || c == '\'') {
      quote = c;
      current += c;
    } else if (c == ',') {
      items.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (quote) throw BadValue("a list with balanced quotes, got '" + text + "'");
  items.push_back(current);
  for (auto& item : items) {
    item = trim(item);
    if (item.empty()) throw BadValue("a list without empty elements, got '" + trim(raw) + "'");
    item = unquote(item);
    // format_list quotes an element with the quote it does not contain; one with both
    // could not be written back (--print-config, a run's config.ini).
    if (item.find('"') != std::string::npos && item.find('\'') != std::string::npos)
      throw BadValue("a list whose elements contain ' or \" but not both, got '" + trim(raw) + "'");
  }
  return items;
}

std::string format_real(double value) {
  char buffer[64];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

std::string format_bool(bool value) { return value ? "true" : "false"; }

std::string format_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string& item = items[i];
    const bool needs_quotes = item.find_first_of(",[]\"'#;") != std::string::npos || trim(item) != item;
    if (i) out += ", ";
    if (needs_quotes) {
      const char q = item.find('"') == std::string::npos ? '"' : '\'';
      out += q + item + q;
    } else {
      out += item;
    }
  }
  return out + "]";
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = static_cast<std::size_t>(-1);
  for (const auto& candidate : candidates) {
    const std::size_t d = edit_distance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  // A typo changes a few characters; beyond a third of the word it is another word.
  const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  return best_distance <= limit ? best : std::string();
}

}  // namespace trainer::app::config_detail
