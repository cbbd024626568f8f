// Every rank's string on rank 0 (see gather_text.hpp).
#include "runtime/gather_text.hpp"

#include <mpi.h>  // MPI_Gather, MPI_Send, MPI_Recv

#include <algorithm>  // std::min

#include "runtime/watchdog.hpp"  // watch: a deadline for the exchange
#include "util/error.hpp"        // MPI_CHECK

namespace trainer::runtime {

std::vector<std::string> gather_text(const World& world, const std::string& value) {
  if (world.comm == MPI_COMM_NULL || world.size == 1) return {value};
  const auto stage = watch(world.watchdog, "gather to rank 0");
  long long n = static_cast<long long>(value.size());
  std::vector<long long> sizes(world.rank == 0 ? static_cast<std::size_t>(world.size) : 0);
  MPI_CHECK(MPI_Gather(&n, 1, MPI_LONG_LONG, sizes.data(), 1, MPI_LONG_LONG, 0, world.comm));
  constexpr long long kPiece = 1LL << 30;
  constexpr int kTag = 7316;
  if (world.rank != 0) {
    for (long long at = 0; at < n; at += kPiece) {
      const int count = static_cast<int>(std::min(kPiece, n - at));
      MPI_CHECK(MPI_Send(value.data() + at, count, MPI_CHAR, 0, kTag, world.comm));
    }
    return {};
  }
  std::vector<std::string> out(static_cast<std::size_t>(world.size));
  out[0] = value;
  for (int r = 1; r < world.size; ++r) {
    std::string& s = out[static_cast<std::size_t>(r)];
    s.resize(static_cast<std::size_t>(sizes[static_cast<std::size_t>(r)]));
    for (long long at = 0; at < static_cast<long long>(s.size()); at += kPiece) {
      const int count = static_cast<int>(std::min(kPiece, static_cast<long long>(s.size()) - at));
      MPI_CHECK(MPI_Recv(&s[static_cast<std::size_t>(at)], count, MPI_CHAR, r, kTag, world.comm, MPI_STATUS_IGNORE));
    }
  }
  return out;
}

}  // namespace trainer::runtime
