#pragma once
// The blocking primitives a host backend (MPI, Gloo) provides to HostCommunicator.
// Each runs on the communication thread, sums in place, and returns false when
// `deadline` passed before the collective completed (HostCommunicator then
// reports the stall and aborts). Counts are element counts.
#include <chrono>   // std::chrono::steady_clock
#include <cstddef>  // std::size_t
#include <string>   // std::string

namespace trainer::comm {

using Deadline = std::chrono::steady_clock::time_point;

class HostCollectives {
 public:
  virtual ~HostCollectives() = default;
  virtual std::string name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  virtual bool sum(float* data, std::size_t count, Deadline deadline) = 0;
  virtual bool sum(double* data, std::size_t count, Deadline deadline) = 0;
  virtual bool broadcast(float* data, std::size_t count, int root, Deadline deadline) = 0;
  // recv holds size() * count elements, rank r's block at r * count.
  virtual bool all_gather(const float* send, float* recv, std::size_t count, Deadline deadline) = 0;
  virtual bool barrier(Deadline deadline) = 0;
};

}  // namespace trainer::comm
