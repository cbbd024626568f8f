#pragma once
// Shapes and non-owning views of float32 memory on a compute device (host memory
// for the CPU backend, device memory for CUDA). Layout is NCHW unless stated.
#include <cstddef>  // std::size_t
#include <string>   // std::string

namespace trainer::compute {

enum class DeviceKind { cpu, cuda };

struct Shape4 {
  int n = 0, c = 0, h = 0, w = 0;
  std::size_t numel() const { return std::size_t(n) * c * h * w; }
  std::size_t plane() const { return std::size_t(h) * w; }
  bool operator==(const Shape4& o) const { return n == o.n && c == o.c && h == o.h && w == o.w; }
  bool operator!=(const Shape4& o) const { return !(*this == o); }
  std::string str() const {
    return "[" + std::to_string(n) + "," + std::to_string(c) + "," + std::to_string(h) + "," +
           std::to_string(w) + "]";
  }
};

struct TensorView {
  float* data = nullptr;
  Shape4 shape;
};

struct ConstTensorView {
  const float* data = nullptr;
  Shape4 shape;
  ConstTensorView() = default;
  ConstTensorView(const float* d, Shape4 s) : data(d), shape(s) {}
  ConstTensorView(const TensorView& v) : data(v.data), shape(v.shape) {}  // NOLINT: implicit by design
};

}  // namespace trainer::compute
