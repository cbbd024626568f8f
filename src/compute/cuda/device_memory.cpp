#include "compute/cuda/device_memory.hpp"

#include <utility>  // std::exchange

#include "compute/cuda/cuda_check.hpp"  // CUDA_CHECK

namespace trainer::compute::cuda {

DeviceMemory::DeviceMemory(std::size_t bytes) : bytes_(bytes) {
  if (bytes) CUDA_CHECK(cudaMalloc(&ptr_, bytes));
}

DeviceMemory::~DeviceMemory() {
  if (ptr_) cudaFree(ptr_);
}

DeviceMemory::DeviceMemory(DeviceMemory&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

StreamScratch::~StreamScratch() {
  if (ptr_) cudaFreeAsync(ptr_, stream_);
}

void* StreamScratch::get(std::size_t bytes) {
  if (bytes <= bytes_ && ptr_) return ptr_;
  std::size_t grown = bytes_ + bytes_ / 2;
  if (grown < bytes) grown = bytes;
  grown = (grown + 255) / 256 * 256;
  ++reallocations_;  // before anything moves, so a failed growth counts too
  if (ptr_) CUDA_CHECK(cudaFreeAsync(ptr_, stream_));
  ptr_ = nullptr;
  bytes_ = 0;
  CUDA_CHECK(cudaMallocAsync(&ptr_, grown, stream_));
  bytes_ = grown;
  return ptr_;
}

}  // namespace trainer::compute::cuda
