#pragma once
// Device memory owners. DeviceMemory is a plain cudaMalloc'd block. StreamScratch
// is one stream's growable workspace: work on one stream runs in order, so every
// op on that stream may reuse the same bytes (cuDNN workspaces, staging copies,
// reduction partials). Growth uses stream-ordered cudaFreeAsync/cudaMallocAsync
// so it never blocks the host or the device.
#include <cuda_runtime_api.h>  // cudaStream_t
#include <cstddef>             // std::size_t
#include <cstdint>             // std::uint64_t

namespace trainer::compute::cuda {

class DeviceMemory {
 public:
  DeviceMemory() = default;
  explicit DeviceMemory(std::size_t bytes);
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  DeviceMemory(DeviceMemory&& o) noexcept;
  DeviceMemory& operator=(DeviceMemory&& o) noexcept;
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

class StreamScratch {
 public:
  explicit StreamScratch(cudaStream_t stream) : stream_(stream) {}
  ~StreamScratch();
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  // At least `bytes` bytes, valid for work enqueued on this stream until the next
  // call to get(). Grows by 1.5x steps to avoid frequent reallocation.
  void* get(std::size_t bytes);
  std::size_t bytes() const { return bytes_; }
  // Times get() moved to a new block.
  std::uint64_t reallocations() const { return reallocations_; }

 private:
  cudaStream_t stream_;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  std::uint64_t reallocations_ = 0;
};

}  // namespace trainer::compute::cuda
