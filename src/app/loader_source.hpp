#pragma once
// Adapts the data layer (split frame list -> distributed sampler -> loader) to the
// training loop's BatchSource.
#include <cstdint>  // std::int64_t
#include <vector>   // std::vector

#include "compute/backend.hpp"      // compute::Backend
#include "data/loader.hpp"         // data::Loader, HostAllocator
#include "data/sampler.hpp"        // data::SamplerOptions
#include "train/batch_source.hpp"  // train::BatchSource

namespace trainer::app {

// Batch memory from the backend's host allocator (pinned for CUDA), so that a
// batch's copy to the device is asynchronous. The backend must outlive the loader.
data::HostAllocator batch_allocator(compute::Backend& backend);

class LoaderSource final : public train::BatchSource {
 public:
  // `frames`: the split's frame list; `loader` must outlive this source.
  LoaderSource(data::Loader& loader, std::vector<std::int64_t> frames, data::SamplerOptions sampler);
  void start_epoch(int epoch) override;
  // The next batch of the epoch. With set_steps_per_epoch beyond one pass, a pass that
  // runs out starts the next one (reshuffled, augmented anew: data::pass_seed), as
  // lightning-pose's max_size_cycle restarts the labelled loader.
  const data::Batch* next() override;
  long batches_per_epoch() const override { return steps_ > 0 ? steps_ : batches_per_pass(); }
  // Batches of one pass over this rank's rows (the same on every rank).
  long batches_per_pass() const;
  // Steps per epoch (train::steps_per_epoch); 0: one pass.
  void set_steps_per_epoch(long steps) { steps_ = steps; }
  bool empty() const { return frames_.empty(); }

 private:
  void start_pass();
  data::Loader& loader_;
  std::vector<std::int64_t> frames_;
  data::SamplerOptions sampler_;
  long steps_ = 0;
  int epoch_ = 0;
  int pass_ = 0;
  long served_ = 0;  // batches handed out this epoch
};

}  // namespace trainer::app
