#pragma once
// Several buffers out of one request of a stream's scratch (CudaStream::scratch):
// asking once for the total matters, since a later, larger request may move the
// scratch and leave earlier pointers dangling. Each part starts on a 256-byte
// boundary (cuBLAS and vectorized kernels read aligned operands fastest). The
// parts are valid for work enqueued on that stream until its scratch is asked for
// again.
#include <cstddef>           // std::size_t
#include <initializer_list>  // std::initializer_list
#include <vector>            // std::vector

#include "compute/cuda/cuda_stream.hpp"  // CudaStream

namespace trainer::compute::cuda {

class ScratchCarve {
 public:
  ScratchCarve(CudaStream& stream, std::initializer_list<std::size_t> part_bytes) {
    std::size_t total = 0;
    for (std::size_t bytes : part_bytes) {
      offsets_.push_back(total);
      total += (bytes + kAlign - 1) / kAlign * kAlign;
    }
    base_ = static_cast<char*>(stream.scratch(total > 0 ? total : kAlign));
  }
  template <class T>
  T* as(std::size_t part) const {
    return reinterpret_cast<T*>(base_ + offsets_.at(part));
  }

 private:
  static constexpr std::size_t kAlign = 256;
  std::vector<std::size_t> offsets_;
  char* base_ = nullptr;
};

}  // namespace trainer::compute::cuda
