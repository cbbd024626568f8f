#pragma once
// Shapes and non-owning views of tensors on a compute device (host memory for the
// CPU backend, device memory for CUDA): float32 NCHW unless the view's storage
// says otherwise.
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

// How a tensor's elements lie in memory. float32 NCHW is what every op takes. The
// 16-bit NHWC storages are the backbone's activations and their gradients in
// bf16-mixed / 16-mixed training (docs/GPU.md, "16-bit activations"): raw bfloat16
// or IEEE half bit patterns (compute/float16.hpp's rounding), channels innermost,
// as tensor-core convolutions read them. `data` still has type float* for those
// views; it points at numel() 16-bit values, which storage_floats() counts in
// floats for allocation.
enum class Storage { f32_nchw, bf16_nhwc, f16_nhwc };

inline bool is_16bit(Storage s) { return s != Storage::f32_nchw; }
inline const char* storage_name(Storage s) {
  return s == Storage::bf16_nhwc ? "bf16 NHWC" : s == Storage::f16_nhwc ? "fp16 NHWC" : "fp32 NCHW";
}
// Floats to allocate for `numel` elements in storage `s`.
inline std::size_t storage_floats(std::size_t numel, Storage s) { return is_16bit(s) ? (numel + 1) / 2 : numel; }

struct TensorView {
  float* data = nullptr;
  Shape4 shape;
  Storage storage = Storage::f32_nchw;
};

struct ConstTensorView {
  const float* data = nullptr;
  Shape4 shape;
  Storage storage = Storage::f32_nchw;
  ConstTensorView() = default;
  ConstTensorView(const float* d, Shape4 s, Storage st = Storage::f32_nchw) : data(d), shape(s), storage(st) {}
  ConstTensorView(const TensorView& v) : data(v.data), shape(v.shape), storage(v.storage) {}  // NOLINT: implicit by design
};

}  // namespace trainer::compute
