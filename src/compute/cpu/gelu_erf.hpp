#pragma once
// nn.GELU() (exact, through erf) in float, written so that the compiler vectorizes a
// loop of it: no calls, no branches, one exponential per element. The CPU's ViT
// steps spent a quarter of their time in std::erf and std::exp in double before
// (vitt_sam2 at 256x256).
//
// erf is Abramowitz & Stegun 7.1.26, erf(a) = 1 - t (a1 + t (a2 + ...)) exp(-a^2) with
// t = 1 / (1 + p a), absolute error below 1.5e-7: the approximation PyTorch's own
// vectorized CPU kernels use for float. exp is Cephes' expf: a power of two times a
// degree-6 polynomial on [-ln2/2, ln2/2], relative error about 1e-7. GELU's forward
// and its slope share exp(-x^2/2): erf(x/sqrt(2)) needs it, and so does the density.
#include <algorithm>  // std::max
#include <cmath>      // std::fabs, std::copysign
#include <cstdint>    // std::int32_t
#include <cstring>    // std::memcpy

namespace trainer::compute::cpu {

// exp(z) for z <= 0 (z below -87 gives exp(-87), about 1.6e-38, not 0).
inline float exp_nonpositive(float z) {
  constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  z = std::max(z, -87.f);
  // z = n ln2 + r: n = round(z / ln2) (truncation of a - 0.5 toward zero, a <= 0).
  const std::int32_t n = std::int32_t(z * kLog2e - 0.5f);
  const float nf = float(n);
  const float r = (z - nf * kLn2Hi) - nf * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.f;
  const std::int32_t bits = (n + 127) << 23;  // 2^n; n >= -126 here
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

// Phi(x), the normal CDF, 0.5 (1 + erf(x / sqrt(2))), given e = exp(-x^2 / 2).
inline float normal_cdf(float x, float e) {
  constexpr float kInvSqrt2 = 0.70710678118654752f, kP = 0.3275911f;
  const float a = std::fabs(x) * kInvSqrt2;
  const float t = 1.f / (1.f + kP * a);
  float poly = 1.061405429f;
  poly = poly * t - 1.453152027f;
  poly = poly * t + 1.421413741f;
  poly = poly * t - 0.284496736f;
  poly = poly * t + 0.254829592f;
  const float erf_a = 1.f - poly * t * e;  // erf(|x| / sqrt(2))
  return 0.5f * (1.f + std::copysign(erf_a, x));
}

// y = x Phi(x).
inline float gelu(float x) { return x * normal_cdf(x, exp_nonpositive(-0.5f * x * x)); }

// dy/dx = Phi(x) + x phi(x).
inline float gelu_slope(float x) {
  constexpr float kInvSqrt2Pi = 0.39894228040143267794f;
  const float e = exp_nonpositive(-0.5f * x * x);
  return normal_cdf(x, e) + x * kInvSqrt2Pi * e;
}

}  // namespace trainer::compute::cpu
