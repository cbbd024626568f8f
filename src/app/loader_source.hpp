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
  const data::Batch* next() override { return loader_.next(); }
  long batches_per_epoch() const override;
  bool empty() const { return frames_.empty(); }

 private:
  data::Loader& loader_;
  std::vector<std::int64_t> frames_;
  data::SamplerOptions sampler_;
};

}  // namespace trainer::app
