// Rank 0's string on every rank (see broadcast_string.hpp).
#include "runtime/broadcast_string.hpp"

#include <mpi.h>  // MPI_Bcast

#include "runtime/watchdog.hpp"  // watch: a deadline for the broadcast
#include "util/error.hpp"        // MPI_CHECK

namespace trainer::runtime {

std::string broadcast_string(const World& world, const std::string& value) {
  if (world.comm == MPI_COMM_NULL || world.size == 1) return value;
  const auto stage = watch(world.watchdog, "start-up: broadcast from rank 0");
  long long n = static_cast<long long>(value.size());
  MPI_CHECK(MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, world.comm));
  std::string out = world.rank == 0 ? value : std::string(static_cast<std::size_t>(n), '\0');
  if (n > 0) MPI_CHECK(MPI_Bcast(&out[0], static_cast<int>(n), MPI_CHAR, 0, world.comm));
  return out;
}

}  // namespace trainer::runtime
