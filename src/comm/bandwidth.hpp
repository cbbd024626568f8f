#pragma once
// All-reduce bandwidth as nccl-tests reports it (doc/PERFORMANCE.md there):
//   algbw = bytes / time
//   busbw = algbw * 2 (n - 1) / n
// busbw is the rate each link must sustain in a ring all-reduce, so it can be
// compared with the hardware's peak whatever the number of ranks.
#include <cstddef>  // std::size_t

namespace trainer::comm {

inline double algbw_gbps(std::size_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0;
}

inline double busbw_gbps(std::size_t bytes, double seconds, int ranks) {
  if (ranks < 1) return 0.0;
  return algbw_gbps(bytes, seconds) * 2.0 * (ranks - 1) / ranks;
}

}  // namespace trainer::comm
