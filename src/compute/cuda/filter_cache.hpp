#pragma once
// The CUDA backend's 16-bit filter copies (Backend::cache_filters16): a model lists
// its convolution filters at the start of each forward, one kernel casts them all,
// and each convolution of that forward and its backward reads its filter's copy
// instead of casting the fp32 filter itself (which cost two casts and two launches
// per convolution per step). The copies hold until the list is cast again or
// invalidate() says the parameters may have changed (the backend calls it on the
// optimizer's update), or until the backend releases a device block (so a freed
// filter's address, reused by another, cannot reach an old copy). A model must call
// cache_filters16 again after any other change of its weights; a ResNet does so at
// every forward, before any of its convolutions.
#include <cstddef>        // std::size_t
#include <cstdint>        // std::uint16_t
#include <unordered_map>  // std::unordered_map
#include <vector>         // std::vector

#include "cast.cuh"                      // kernels::FilterCast, Format16
#include "compute/backend.hpp"           // Backend, DeviceBuffer
#include "compute/cuda/cuda_stream.hpp"  // CudaStream

namespace trainer::compute::cuda {

class FilterCache {
 public:
  explicit FilterCache(Backend& backend) : backend_(backend) {}
  FilterCache(const FilterCache&) = delete;
  FilterCache& operator=(const FilterCache&) = delete;

  // Casts every listed filter on `s`, in one launch. A list other than the last
  // allocates the copies and uploads the launch's table first: never while `s`
  // records (SystemError: the recording fails, and the step runs op by op).
  void cast(const Backend::Filter* filters, std::size_t count, kernels::Format16 format, CudaStream& s);
  // The copy of filter `w` [k, c, kernel, kernel] when the last cast listed it with
  // that shape and no invalidate() came since; null otherwise.
  const std::uint16_t* find(const float* w, int k, int c, int kernel) const;
  void invalidate() { valid_ = false; }

 private:
  void rebuild(const Backend::Filter* filters, std::size_t count, CudaStream& s);

  Backend& backend_;
  std::vector<Backend::Filter> filters_;
  std::unordered_map<const float*, std::size_t> index_;  // filter -> its entry
  std::vector<kernels::FilterCast> table_host_;
  DeviceBuffer copies_, table_;  // the 16-bit copies (two per float), the launch's table
  std::size_t max_values_ = 0;
  bool valid_ = false;
  std::uint64_t generation_ = 0;  // backend_.released_blocks() when the copies were made
};

}  // namespace trainer::compute::cuda
