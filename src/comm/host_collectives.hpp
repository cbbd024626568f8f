#pragma once
// The blocking primitives a host backend (MPI, Gloo) provides to HostCommunicator.
// Each runs on the communication thread, sums in place, and returns false when
// `deadline` passed, or a member's process exited, before the collective completed
// (HostCommunicator then reports which and aborts). Counts are element counts.
#include <chrono>      // std::chrono::steady_clock
#include <cstddef>     // std::size_t
#include <functional>  // std::function
#include <string>      // std::string

namespace trainer::comm {

// When a primitive stops waiting: at `at`, or as soon as `peer_exited` (polled a few
// times a second; may be empty) says a member's process is gone. A collective that
// lost a member never completes: Open MPI's non-blocking collectives stay pending
// (Gloo's fail at once, on the closed connection).
struct Deadline {
  std::chrono::steady_clock::time_point at;
  std::function<bool()> peer_exited;
};

class HostCollectives {
 public:
  virtual ~HostCollectives() = default;
  virtual std::string name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  virtual bool sum(float* data, std::size_t count, const Deadline& deadline) = 0;
  virtual bool sum(double* data, std::size_t count, const Deadline& deadline) = 0;
  virtual bool broadcast(float* data, std::size_t count, int root, const Deadline& deadline) = 0;
  // recv holds size() * count elements, rank r's block at r * count.
  virtual bool all_gather(const float* send, float* recv, std::size_t count, const Deadline& deadline) = 0;
  virtual bool barrier(const Deadline& deadline) = 0;
};

}  // namespace trainer::comm
