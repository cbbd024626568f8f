#pragma once
// The two places where a model layer talks to the world outside one process, as
// small interfaces the distributed layer implements (null = single process):
// - BatchNormSync: all-gather of per-channel moments (forward) and all-reduce of
//   per-channel sums (backward), so batch statistics and their gradient sums
//   cover the global batch (synchronized BN).
// - GradientReadyListener: told as soon as a parameter's gradient is final, in
//   reverse registration order, so gradient buckets can start their all-reduce
//   while backward continues (PyTorch DDP's reducer).
// And the Context every forward/backward call receives, and the StepKey of a
// training step's own random draws.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint64_t, std::int64_t

#include "compute/backend.hpp"  // compute::Backend
#include "compute/stream.hpp"   // compute::Stream

namespace trainer::model {

class BatchNormSync {
 public:
  virtual ~BatchNormSync() = default;
  // Sums `count` floats (per-channel sums) element-wise over all ranks, in
  // place, on `stream`.
  virtual void all_reduce_sum(float* data, std::size_t count, compute::Stream& stream) = 0;
  // Every rank's `count_per_rank` floats into recv, rank by rank, on `stream`
  // (per-channel moments, merged with Chan's formula rather than summed).
  virtual void all_gather(const float* send, float* recv, std::size_t count_per_rank,
                          compute::Stream& stream) = 0;
  // The number of ranks all_gather hears from.
  virtual int ranks() const = 0;
  // The number of values per channel over the global batch, given this rank's
  // (local_batch * H * W). Ranks may differ in batch size: an implementation
  // knows the global batch of the current step (one all-reduce per step, cached)
  // and returns local_values / local_batch * global_batch.
  virtual double global_count(double local_values, int local_batch) = 0;
  // The next forward sees another batch in the same step (a semi-supervised step's
  // unlabelled frames after its labelled ones): forget the cached global batch.
  virtual void new_batch() {}
};

class GradientReadyListener {
 public:
  virtual ~GradientReadyListener() = default;
  // Gradients [offset, offset + count) of the flat gradient buffer are final.
  // Offsets arrive in strictly decreasing order within one backward pass.
  virtual void on_ready(std::size_t offset, std::size_t count, compute::Stream& stream) = 0;
};

// Which training step draws (the run's model seed, the batch's epoch and index within
// it): the key of the network's own train-mode randomness (DINOv3's RoPE coordinate
// rescale). Draws are hashed from it, not taken from a generator's state, so a
// resumed run, every rank and a recorded step's replay draw alike.
struct StepKey {
  std::uint64_t seed = 0;
  std::int64_t epoch = 0, batch = 0;
  // The drawing rank: per-sample draws (the EfficientNets' stochastic depth) mix it in,
  // so ranks do not drop the same rows; per-step draws (DINOv3's rescale) ignore it.
  int rank = 0;
};

// What a layer needs to run: where, on which stream, train or eval mode, hooks.
struct Context {
  compute::Backend& backend;
  compute::Stream& stream;
  bool training = true;
  BatchNormSync* bn_sync = nullptr;              // null: local batch statistics
  GradientReadyListener* gradients = nullptr;    // null: nobody listens
};

}  // namespace trainer::model
