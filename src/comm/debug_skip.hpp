#pragma once
// A hidden debugging aid for the collective deadline: with
//   TRAINER_DEBUG_SKIP_COLLECTIVE=<rank>:<n>
// rank <rank> never joins its n-th collective (1-based, counted per communicator)
// and stalls there, as a rank stuck in data loading or in a different code path
// would. The other ranks then hit `collective_timeout` and must name it.
#include <string>  // std::string

#include "util/env.hpp"  // Env

namespace trainer::comm {

struct SkipCollective {
  int rank = -1;     // -1: skip nothing
  long index = 0;    // 1-based collective number
  bool matches(int r, long i) const { return rank >= 0 && r == rank && i == index; }
};

// Parses "<rank>:<n>"; empty text means no skip. Throws UserError when malformed.
SkipCollective parse_skip_collective(const std::string& text);
// Reads TRAINER_DEBUG_SKIP_COLLECTIVE from `env`.
SkipCollective skip_collective_from_env(const Env& env);

}  // namespace trainer::comm
