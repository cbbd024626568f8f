// Lightning's count-or-fraction batch settings (see batch_limit.hpp).
#include "train/batch_limit.hpp"

#include <cmath>      // std::floor, std::isfinite
#include <cstdio>     // std::snprintf
#include <cstdlib>    // std::strtod
#include <algorithm>  // std::max
#include <stdexcept>  // std::invalid_argument

#include "util/error.hpp"  // UserError

namespace trainer::train {

namespace {
const char* kExpected = "a count of batches (a whole number like 10) or a fraction of the epoch in [0.0, 1.0] "
                        "(with a decimal point, like 0.25), or null";
}  // namespace

BatchLimit parse_batch_limit(const std::string& raw) {
  std::string text = raw;
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.erase(0, 1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.pop_back();
  if (text.empty() || text == "null" || text == "None" || text == "none" || text == "~") return {};
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(v) || v < 0)
    throw std::invalid_argument(std::string(kExpected) + ", got '" + text + "'");
  // YAML's int: digits only. A float: a decimal point or an exponent.
  const bool is_float = text.find_first_of(".eE") != std::string::npos;
  if (!is_float) return BatchLimit::count(long(v));
  if (v <= 1) return BatchLimit::fraction(v);
  if (v == std::floor(v)) return BatchLimit::count(long(v));  // Lightning: 3.0 is 3 batches
  throw std::invalid_argument(std::string(kExpected) + ", got " + text + " (a fraction above 1)");
}

std::string format_batch_limit(const BatchLimit& limit) {
  if (limit.kind == BatchLimit::Kind::unset) return "null";
  if (limit.kind == BatchLimit::Kind::count) return std::to_string(long(limit.value));
  char text[32];
  std::snprintf(text, sizeof text, "%.10g", limit.value);
  std::string out = text;
  if (out.find_first_of(".eE") == std::string::npos) out += ".0";  // stays a fraction when read back
  return out;
}

long val_check_batches(const BatchLimit& v, long batches_per_epoch) {
  if (v.kind == BatchLimit::Kind::fraction)  // Lightning: max(1, int(num_training_batches * fraction))
    return std::max(1L, long(double(batches_per_epoch) * v.value));
  if (v.kind == BatchLimit::Kind::count) {
    if (v.value < 1)
      throw UserError("training.val_check_interval = 0 validates after every 0 batches",
                      "give a count of batches of at least 1, or a fraction of the epoch like 0.5 (null: at the "
                      "epoch's end)");
    if (long(v.value) > batches_per_epoch)
      throw UserError("training.val_check_interval = " + format_batch_limit(v) + " is more than the " +
                          std::to_string(batches_per_epoch) + " training batches of an epoch",
                      "Lightning refuses it too: give at most " + std::to_string(batches_per_epoch) +
                          " batches, or a fraction of the epoch like 0.5");
    return long(v.value);
  }
  return batches_per_epoch;
}

}  // namespace trainer::train
