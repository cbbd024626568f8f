#pragma once
// RAII owner of host memory from a backend's host allocator (pinned for CUDA, so
// copies to and from the device can be asynchronous); the host-side twin of
// DeviceBuffer. Whoever queues a copy into or out of it must let that copy finish
// before the buffer is freed or regrown.
#include <cstddef>  // std::size_t

#include "compute/backend.hpp"  // Backend::allocate_host, release_host

namespace trainer::compute {

// `count` elements of a trivially copyable T (not initialized).
template <typename T>
class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(Backend& backend, std::size_t count)
      : backend_(&backend),
        data_(count ? static_cast<T*>(backend.allocate_host(count * sizeof(T))) : nullptr),
        count_(count) {}
  ~HostBuffer() { reset(); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  HostBuffer(HostBuffer&& o) noexcept : backend_(o.backend_), data_(o.data_), count_(o.count_) {
    o.data_ = nullptr;
    o.count_ = 0;
  }
  HostBuffer& operator=(HostBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      backend_ = o.backend_;
      data_ = o.data_;
      count_ = o.count_;
      o.data_ = nullptr;
      o.count_ = 0;
    }
    return *this;
  }
  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  void reset() noexcept {
    if (data_) backend_->release_host(data_);
    data_ = nullptr;
    count_ = 0;
  }

 private:
  Backend* backend_ = nullptr;
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

// Grows `buffer` to at least `count` elements, reallocating (contents not kept)
// only when it is smaller. The old memory is freed before the new is taken, so
// the peak is the larger size, not the sum.
template <typename T>
void ensure_capacity(Backend& backend, HostBuffer<T>& buffer, std::size_t count) {
  if (buffer.size() >= count) return;
  buffer.reset();
  buffer = HostBuffer<T>(backend, count);
}

}  // namespace trainer::compute
