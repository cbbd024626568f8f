#pragma once
// Rank-aware console output. A Log is a value passed to whoever prints; only the
// rank that owns the console (rank 0 by default) writes info lines, every rank
// may write warnings prefixed with its rank when they concern it alone.
#include <iostream>  // std::cout, std::cerr
#include <memory>    // std::shared_ptr
#include <mutex>     // std::mutex
#include <string>    // std::string
#include <vector>    // std::vector

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
    if (is_root()) emit("warning: " + line);
  }
  // Printed by the calling rank, tagged with it.
  void warn_this_rank(const std::string& line) const { emit("warning: [rank " + std::to_string(rank_) + "] " + line); }

  // While a command checks its inputs, warnings wait here (shared by the copies of
  // this Log made from now on): a command refused during its set-up prints its
  // `error:` line alone, without warnings about a run that never starts.
  void hold_warnings() { held_ = std::make_shared<Held>(); }
  // The set-up passed: print what waited, in order, and print at once from now on.
  void release_warnings() const {
    if (!held_) return;
    std::lock_guard<std::mutex> lock(held_->mutex);
    for (const auto& line : held_->lines) std::cerr << line << std::endl;
    held_->lines.clear();
    held_->released = true;
  }

 private:
  struct Held {
    std::mutex mutex;
    std::vector<std::string> lines;
    bool released = false;
  };
  void emit(const std::string& line) const {
    if (held_) {
      std::lock_guard<std::mutex> lock(held_->mutex);
      if (!held_->released) {
        held_->lines.push_back(line);
        return;
      }
    }
    std::cerr << line << std::endl;
  }

  int rank_ = 0;
  bool quiet_ = false;
  std::shared_ptr<Held> held_;
};

}  // namespace trainer
