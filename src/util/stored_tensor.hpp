#pragma once
// A named tensor read from another framework's weight file (PyTorch .pth,
// .safetensors): its element type, shape, and its elements as contiguous
// little-endian bytes in row-major order. Converting them (float16 and bfloat16
// included) is for the layer that knows the numerics (train/pretrained_weights).
#include <cstddef>  // std::size_t
#include <cstdint>  // std::int64_t
#include <string>   // std::string
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

}  // namespace trainer
