#pragma once
// A correctness check of a Communicator over its real ranks: sum and average
// (float and double, odd and empty sizes), broadcast from every root, all-gather,
// several asynchronous all-reduces in flight, and a barrier. Run by every rank
// under mpirun (`trainer bench allreduce --check`); returns the number of failed
// checks summed over all ranks, so every rank agrees on the verdict.
#include <iosfwd>  // std::ostream

#include "comm/communicator.hpp"  // Communicator

namespace trainer::comm {

int run_self_check(Communicator& comm, std::ostream& log);

}  // namespace trainer::comm
