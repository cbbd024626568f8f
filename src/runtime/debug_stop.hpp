#pragma once
// A hidden debugging aid for the watchdog and the heartbeats: with
//   TRAINER_DEBUG_STOP=<rank>:<place>
// rank <rank> sends itself SIGSTOP when it reaches <place>, as a rank that is
// suspended, swapped out or stopped in a debugger would. <place> is part of a
// watchdog stage's name ("MPI_Init", "MPI_Comm_dup", "communicator set-up", ...) or
// "collective #<n>": inside a host communicator's n-th collective, after this rank
// announced its arrival. The other ranks must then end the job and name it.
#include <string>  // std::string

namespace trainer::runtime {

struct DebugStop {
  int rank = -1;      // -1: never stop
  std::string place;  // matched as a substring of the place reached
  bool matches(int r, const std::string& where) const {
    return rank >= 0 && r == rank && where.find(place) != std::string::npos;
  }
};

// Parses "<rank>:<place>"; empty text means no stop. Throws UserError when malformed.
DebugStop parse_debug_stop(const std::string& text);

}  // namespace trainer::runtime
