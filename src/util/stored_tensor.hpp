#pragma once
// A named tensor read from another framework's weight file (PyTorch .pth,
// .safetensors): its element type, shape, and its elements as contiguous
// little-endian bytes in row-major order. Converting them (float16 and bfloat16
// included) is for the layer that knows the numerics (train/pretrained_weights).
#include <cstddef>  // std::size_t
#include <cstdint>  // std::int64_t
#include <string>   // std::string
#include <utility>  // std::move
#include <vector>   // std::vector

namespace trainer {

enum class StoredType { f32, f64, f16, bf16, i64, i32 };

inline std::size_t bytes_per_element(StoredType t) {
  switch (t) {
    case StoredType::f64:
    case StoredType::i64: return 8;
    case StoredType::f32:
    case StoredType::i32: return 4;
    default: return 2;
  }
}

struct StoredTensor {
  std::string name;
  StoredType type = StoredType::f32;
  std::vector<std::int64_t> shape;
  std::string bytes;  // shape's product elements of `type`
};

// A float32 tensor of `values` (shape's product of them), as the trainer writes or
// resizes one.
template <class Dim>
StoredTensor float32_tensor(std::string name, const std::vector<Dim>& shape, const std::vector<float>& values) {
  StoredTensor t;
  t.name = std::move(name);
  t.shape.assign(shape.begin(), shape.end());
  t.bytes.assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  return t;
}

}  // namespace trainer
