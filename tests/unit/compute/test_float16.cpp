// The 16-bit rounding rules of compute/float16.hpp, shared by the CPU emulation and
// the CUDA cast kernels. (All 2^32 floats were also checked once against GCC's
// _Float16 conversion and an independent bf16 nearest-even reference.)
#include <catch2/catch.hpp>

#include <cmath>    // std::ldexp, std::isnan, std::isinf
#include <cstdint>  // std::uint16_t, std::uint32_t
#include <limits>   // std::numeric_limits

#include "compute/float16.hpp"
#include "compute/precision.hpp"
#include "util/error.hpp"

using namespace trainer::compute;
using namespace trainer::compute::f16;

namespace {
float from_bits(std::uint32_t u) { return float_of(u); }
}  // namespace

TEST_CASE("float -> bfloat16: nearest even, overflow to inf, NaN kept", "[compute][precision]") {
  CHECK(float_to_bf16(1.f) == 0x3f80);
  CHECK(float_to_bf16(-2.f) == 0xc000);
  CHECK(float_to_bf16(0.f) == 0x0000);
  CHECK(float_to_bf16(-0.f) == 0x8000);
  CHECK(float_to_bf16(3.14159265f) == 0x4049);  // 3.140625
  CHECK(bf16_to_float(0x4049) == 3.140625f);
  // Ties go to the even neighbour; anything above the tie rounds up.
  CHECK(float_to_bf16(from_bits(0x3f808000u)) == 0x3f80);
  CHECK(float_to_bf16(from_bits(0x3f818000u)) == 0x3f82);
  CHECK(float_to_bf16(from_bits(0x3f808001u)) == 0x3f81);
  CHECK(float_to_bf16(from_bits(0x3f807fffu)) == 0x3f80);
  // The largest floats round to inf; inf stays inf.
  CHECK(float_to_bf16(std::numeric_limits<float>::max()) == 0x7f80);
  CHECK(float_to_bf16(from_bits(0x7f7f7fffu)) == 0x7f7f);
  CHECK(float_to_bf16(-std::numeric_limits<float>::infinity()) == 0xff80);
  // NaN (quiet or signalling) stays NaN.
  CHECK(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(std::isnan(bf16_to_float(float_to_bf16(from_bits(0x7f800001u)))));
  // Subnormal floats round like any other value.
  CHECK(float_to_bf16(from_bits(0x00000001u)) == 0x0000);
  CHECK(float_to_bf16(from_bits(0x00008000u)) == 0x0000);  // tie -> even (0)
  CHECK(float_to_bf16(from_bits(0x00018000u)) == 0x0002);  // tie -> even (2)
  CHECK(float_to_bf16(from_bits(0x00010001u)) == 0x0001);
  // Every bf16 value survives a round trip.
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = bf16_to_float(std::uint16_t(h));
    if (std::isnan(f)) continue;
    REQUIRE(float_to_bf16(f) == h);
  }
}

TEST_CASE("float -> half: nearest even, subnormals, overflow to inf, NaN kept", "[compute][precision]") {
  CHECK(float_to_half(1.f) == 0x3c00);
  CHECK(float_to_half(-2.f) == 0xc000);
  CHECK(float_to_half(0.1f) == 0x2e66);
  CHECK(float_to_half(-0.f) == 0x8000);
  CHECK(float_to_half(65504.f) == 0x7bff);  // the largest half
  CHECK(float_to_half(65519.f) == 0x7bff);  // below the tie with 65536
  CHECK(float_to_half(65520.f) == 0x7c00);  // the tie rounds to "65536": inf
  CHECK(float_to_half(1e5f) == 0x7c00);
  CHECK(float_to_half(-1e30f) == 0xfc00);
  CHECK(float_to_half(std::numeric_limits<float>::infinity()) == 0x7c00);
  const std::uint16_t nan = float_to_half(std::numeric_limits<float>::quiet_NaN());
  CHECK((nan & 0x7c00) == 0x7c00);
  CHECK((nan & 0x03ff) != 0);
  CHECK(std::isnan(half_to_float(float_to_half(-std::numeric_limits<float>::quiet_NaN()))));
  // Ties in the normal range.
  CHECK(float_to_half(1.f + std::ldexp(1.f, -11)) == 0x3c00);
  CHECK(float_to_half(1.f + 3 * std::ldexp(1.f, -11)) == 0x3c02);
  CHECK(float_to_half(std::nextafter(1.f + std::ldexp(1.f, -11), 2.f)) == 0x3c01);
  // Subnormals: steps of 2^-24; 2^-25 ties to 0, above it to the smallest subnormal.
  CHECK(float_to_half(std::ldexp(1.f, -24)) == 0x0001);
  CHECK(float_to_half(std::ldexp(1.f, -25)) == 0x0000);
  CHECK(float_to_half(-std::ldexp(1.f, -25)) == 0x8000);
  CHECK(float_to_half(std::nextafter(std::ldexp(1.f, -25), 1.f)) == 0x0001);
  CHECK(float_to_half(std::ldexp(3.f, -25)) == 0x0002);  // 1.5 units: tie -> even (2)
  CHECK(float_to_half(std::ldexp(5.f, -25)) == 0x0002);  // 2.5 units: tie -> even (2)
  CHECK(float_to_half(std::ldexp(1.f, -14)) == 0x0400);  // the smallest normal
  CHECK(float_to_half(std::ldexp(1.f, -14) - std::ldexp(1.f, -25)) == 0x0400);  // tie, carries up
  CHECK(float_to_half(1e-10f) == 0x0000);
  CHECK(half_to_float(0x0001) == std::ldexp(1.f, -24));
  CHECK(half_to_float(0x03ff) == std::ldexp(1023.f, -24));
  CHECK(half_to_float(0x8001) == -std::ldexp(1.f, -24));
  CHECK(half_to_float(0x7bff) == 65504.f);
  CHECK(std::isinf(half_to_float(0x7c00)));
  // Every half value survives a round trip.
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = half_to_float(std::uint16_t(h));
    if (std::isnan(f)) continue;
    REQUIRE(float_to_half(f) == h);
  }
}

TEST_CASE("precision names and rounding helpers", "[compute][precision]") {
  for (Precision p : {Precision::fp32, Precision::bf16, Precision::fp16})
    CHECK(parse_precision(precision_name(p)) == p);
  CHECK(std::string(precision_name(Precision::bf16)) == "bf16-mixed");
  CHECK_THROWS_AS(parse_precision("bf16"), trainer::UserError);
  const float x = 1.f / 3.f;
  CHECK(round_to_precision(Precision::fp32, x) == x);
  CHECK(round_to_precision(Precision::bf16, x) == round_bf16(x));
  CHECK(round_to_precision(Precision::fp16, x) == round_half(x));
  CHECK(std::fabs(round_bf16(x) - x) <= x * std::ldexp(1.f, -8));
  CHECK(std::fabs(round_half(x) - x) <= x * std::ldexp(1.f, -11));
}

TEST_CASE("conv algorithm names follow the enum", "[compute][precision]") {
  // The GPU tests and messages index conv_algorithms_names() by the enum's value.
  const auto& names = conv_algorithms_names();
  REQUIRE(names.size() == 6);
  for (std::size_t i = 0; i < names.size(); ++i) CHECK(static_cast<std::size_t>(parse_conv_algorithms(names[i])) == i);
  CHECK(parse_conv_algorithms("auto") == ConvAlgorithms::automatic);
  CHECK(parse_conv_algorithms("autotune") == ConvAlgorithms::autotune);
  CHECK_THROWS_AS(parse_conv_algorithms("fastest"), trainer::UserError);
}
