#pragma once
// Rank-aware console output. A Log is a value passed to whoever prints; only the
// rank that owns the console (rank 0 by default) writes info lines, every rank
// may write warnings prefixed with its rank when they concern it alone.
#include <iostream>  // std::cout, std::cerr
#include <string>    // std::string

namespace trainer {

class Log {
 public:
  Log() = default;
  Log(int rank, bool quiet = false) : rank_(rank), quiet_(quiet) {}

  int rank() const { return rank_; }
  bool is_root() const { return rank_ == 0; }

  // Printed by rank 0 only.
  void info(const std::string& line) const {
    if (is_root() && !quiet_) std::cout << line << std::endl;
  }
  // Printed by rank 0 only, on stderr.
  void warn(const std::string& line) const {
    if (is_root()) std::cerr << "warning: " << line << std::endl;
  }
  // Printed by the calling rank, tagged with it.
  void warn_this_rank(const std::string& line) const {
    std::cerr << "warning: [rank " << rank_ << "] " << line << std::endl;
  }

 private:
  int rank_ = 0;
  bool quiet_ = false;
};

}  // namespace trainer
