#pragma once
// CRC-32C (Castagnoli), the checksum of TFRecord framing, and TFRecord's masked form.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint32_t

namespace trainer {

// CRC-32C of `size` bytes (reflected polynomial 0x82F63B78, initial and final XOR ~0).
std::uint32_t crc32c(const void* data, std::size_t size);

// TFRecord stores a rotated, offset CRC so that a CRC of data that itself contains
// CRCs does not degenerate (tensorflow/core/lib/hash/crc32c.h, Mask()).
inline std::uint32_t masked_crc32c(const void* data, std::size_t size) {
  const std::uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

}  // namespace trainer
