#pragma once
// Rank 0's string on every rank: how the ranks agree, before any communicator
// exists, on a name only rank 0 may choose (the run folder's timestamp) or on
// whether rank 0's part went well (its error text, empty when none).
#include <string>  // std::string

#include "runtime/world.hpp"  // World

namespace trainer::runtime {

// Collective over world.comm, under a watchdog deadline; with one rank (or no
// communicator) returns `value` unchanged.
std::string broadcast_string(const World& world, const std::string& value);

}  // namespace trainer::runtime
