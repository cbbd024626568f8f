#pragma once
// Lightning's batch-count settings that take either a number of batches or a
// fraction of an epoch's (training.limit_train_batches, training.val_check_interval),
// read as Lightning's _determine_batch_limits reads them: a whole number (YAML int)
// is a count, a number with a decimal point in [0, 1] a fraction, and a larger one
// with a zero fraction (3.0) a count again. So `1` is one batch and `1.0` the epoch.
#include <string>  // std::string

namespace trainer::train {

struct BatchLimit {
  enum class Kind { unset, count, fraction } kind = Kind::unset;  // unset: null, the default
  double value = 0;  // count: batches; fraction: of the epoch's batches, in [0, 1]

  static BatchLimit count(long n) { return {Kind::count, double(n)}; }
  static BatchLimit fraction(double f) { return {Kind::fraction, f}; }
  bool is_set() const { return kind != Kind::unset; }
};

// Reads "", "null", "3", "3.0", "0.25". Throws std::invalid_argument naming what
// the text should have been for anything else (negative, 1.5, words).
BatchLimit parse_batch_limit(const std::string& text);
// The text parse_batch_limit reads back ("null", "3", "0.25", "1.0").
std::string format_batch_limit(const BatchLimit& limit);

// Lightning's val_check_batch: the batches between validations in an epoch of
// `batches_per_epoch` batches for training.val_check_interval: unset and 1.0 the whole
// epoch, a fraction f max(1, int(batches x f)), a count itself. A count of 0 or above
// the epoch's batches is a UserError (Lightning refuses the latter too).
long val_check_batches(const BatchLimit& interval, long batches_per_epoch);

}  // namespace trainer::train
