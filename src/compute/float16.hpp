#pragma once
// The one definition of the 16-bit rounding rules, shared by host code (the CPU
// backend's emulation of mixed precision) and device code (kernels/cast.cu):
//   float -> bfloat16: round to nearest, ties to even; overflow rounds to inf;
//                      NaN stays NaN (quiet, sign kept).
//   float -> IEEE half: round to nearest, ties to even, also into the subnormal
//                      range; |x| >= 65520 becomes inf; NaN stays NaN (quiet).
//   16-bit -> float:   exact.
// These are the rules of CUDA's __float2bfloat16_rn / __float2half_rn, written out
// with integer operations so the CPU and the GPU give the same bits. Values travel
// as raw std::uint16_t bit patterns (what cuDNN reads for CUDNN_DATA_BFLOAT16 and
// CUDNN_DATA_HALF).
#include <cstdint>  // std::uint16_t, std::uint32_t
#if !defined(__CUDA_ARCH__)
#include <cstring>  // std::memcpy for the host's bit casts
#endif

#include "compute/host_device.hpp"  // TRAINER_HOST_DEVICE

namespace trainer::compute::f16 {

TRAINER_HOST_DEVICE inline std::uint32_t bits_of(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

TRAINER_HOST_DEVICE inline float float_of(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// ---- bfloat16: the upper half of a float ------------------------------------

TRAINER_HOST_DEVICE inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t u = bits_of(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((u >> 16) | 0x0040u);  // NaN, quieted
  // Adding 0x7fff plus the lowest kept bit rounds half to even; a carry into the
  // exponent is the correct next binade, and past the largest finite value gives inf.
  u += 0x7fffu + ((u >> 16) & 1u);
  return std::uint16_t(u >> 16);
}

TRAINER_HOST_DEVICE inline float bf16_to_float(std::uint16_t h) { return float_of(std::uint32_t(h) << 16); }

// ---- IEEE 754 binary16 ------------------------------------------------------

TRAINER_HOST_DEVICE inline std::uint16_t float_to_half(float f) {
  const std::uint32_t u = bits_of(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return std::uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // NaN, quieted
  if (a >= 0x477ff000u) return std::uint16_t(sign | 0x7c00u);  // >= 65520 (and inf): inf
  if (a >= 0x38800000u) {                                     // normal half (>= 2^-14)
    a += 0xfffu + ((a >> 13) & 1u);                           // round half to even at bit 13
    return std::uint16_t(sign | ((a - (std::uint32_t(127 - 15) << 23)) >> 13));
  }
  if (a <= 0x33000000u) return std::uint16_t(sign);  // <= 2^-25: zero (2^-25 itself ties to 0)
  // Subnormal half: the value in units of 2^-24 is m * 2^(e - 126), e <= 112.
  const std::uint32_t e = a >> 23;
  const std::uint32_t m = (a & 0x7fffffu) | 0x800000u;
  const std::uint32_t shift = 126u - e;  // 14..24
  std::uint32_t r = m >> shift;
  const std::uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (r & 1u))) ++r;  // may carry into the smallest normal: right
  return std::uint16_t(sign | r);
}

TRAINER_HOST_DEVICE inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    // Zero or subnormal: m * 2^-24, exact in float.
    const float v = float(m) * 5.9604644775390625e-8f;
    return float_of(bits_of(v) | sign);
  }
  if (e == 31) return float_of(sign | 0x7f800000u | (m << 13));  // inf or NaN
  return float_of(sign | ((e + 112u) << 23) | (m << 13));
}

// ---- round trips: the value a float has after a trip through 16 bits -------

TRAINER_HOST_DEVICE inline float round_bf16(float f) { return bf16_to_float(float_to_bf16(f)); }
TRAINER_HOST_DEVICE inline float round_half(float f) { return half_to_float(float_to_half(f)); }

}  // namespace trainer::compute::f16
