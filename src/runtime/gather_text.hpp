#pragma once
// Every rank's string on rank 0, in rank order, of any size (plan_report.hpp's
// gather_strings is for small texts): how rank 0 collects the pieces of
// an output only it may write (the rows of a video's predictions CSV that each rank
// computed), without a shared file system.
#include <string>  // std::string
#include <vector>  // std::vector

#include "runtime/world.hpp"  // World

namespace trainer::runtime {

// Collective over world.comm, under a watchdog deadline. Rank 0 gets world.size
// strings (its own first); the other ranks get an empty vector. With one rank (or
// no communicator) returns {value}. Strings may exceed 2 GiB in total: they are
// sent in pieces below MPI's int count limit.
std::vector<std::string> gather_text(const World& world, const std::string& value);

}  // namespace trainer::runtime
