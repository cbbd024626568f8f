#pragma once
// One interface for the collectives of data-parallel training, with three
// implementations: NCCL (device buffers, bootstrapped by an MPI broadcast of the
// unique id), MPI and Gloo (host buffers, Gloo bootstrapped over MPI).
// Counts are element counts, never byte counts. Every call must be made by every
// rank in the same order; the communicator enforces `collective_timeout` and, when
// a rank does not arrive, reports which collective and which ranks, then aborts.
#include <cstddef>  // std::size_t
#include <memory>   // std::unique_ptr
#include <string>   // std::string

#include "compute/stream.hpp"  // compute::Stream

namespace trainer::comm {

enum class ReduceOp { sum, avg };

// An asynchronous collective in flight (a gradient bucket's all-reduce).
class Work {
 public:
  virtual ~Work() = default;
  // Host backends: block until done. NCCL: make `stream` wait for completion.
  virtual void wait(compute::Stream& stream) = 0;
  // After wait(): how long the collective itself ran, in seconds (for the overlap
  // measurement: run time not spent in wait() was hidden behind computation);
  // -1 when the backend cannot tell.
  virtual double seconds() const { return -1.0; }
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string name() const = 0;  // "nccl", "mpi" or "gloo"
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // True when buffers live in device memory (NCCL); false for host buffers.
  virtual bool uses_device_buffers() const = 0;

  // `what` names the collective for timeout reports (e.g. "gradient bucket 3").
  virtual void all_reduce(float* data, std::size_t count, ReduceOp op, compute::Stream& stream,
                          const char* what = "all_reduce") = 0;
  virtual void all_reduce(double* data, std::size_t count, ReduceOp op, compute::Stream& stream,
                          const char* what = "all_reduce") = 0;
  virtual std::unique_ptr<Work> all_reduce_async(float* data, std::size_t count, ReduceOp op,
                                                 compute::Stream& stream,
                                                 const char* what = "all_reduce") = 0;
  virtual void broadcast(float* data, std::size_t count, int root, compute::Stream& stream,
                         const char* what = "broadcast") = 0;
  virtual void all_gather(const float* send, float* recv, std::size_t count_per_rank,
                          compute::Stream& stream, const char* what = "all_gather") = 0;
  virtual void barrier(const char* what = "barrier") = 0;
  // Sets the training step reported when a collective times out.
  virtual void set_step(long step) = 0;
};

}  // namespace trainer::comm
