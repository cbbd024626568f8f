#pragma once
// Helpers for the compute unit tests: random tensors, reference convolutions in
// double precision, and error measures.
#include <algorithm>  // std::max
#include <cmath>      // std::fabs
#include <cstddef>    // std::size_t
#include <random>     // std::mt19937, distributions
#include <vector>     // std::vector

#include "compute/backend.hpp"  // Backend, ConvGeometry, Shape4

namespace trainer::compute::test {

inline std::vector<float> random_vector(std::size_t n, unsigned seed, float lo = -1.f,
                                        float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// max |a - b| / max(max |b|, 1e-12): the error relative to the reference's scale.
inline double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 1e-12;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num = std::max(num, std::fabs(double(a[i]) - b[i]));
    den = std::max(den, std::fabs(double(b[i])));
  }
  return num / den;
}

inline double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
  return s;
}

// Reference convolution: x [N, Cin, H, W], w [Cout, Cin, k, k] -> y [N, Cout, OH, OW].
inline std::vector<float> ref_conv(const std::vector<float>& x, Shape4 xs,
                                   const std::vector<float>& w, const ConvGeometry& g) {
  const int oh = g.conv_out(xs.h), ow = g.conv_out(xs.w), k = g.kernel;
  std::vector<float> y(std::size_t(xs.n) * g.out_channels * oh * ow);
  for (int n = 0; n < xs.n; ++n)
    for (int o = 0; o < g.out_channels; ++o)
      for (int r = 0; r < oh; ++r)
        for (int c = 0; c < ow; ++c) {
          double acc = 0;
          for (int i = 0; i < xs.c; ++i)
            for (int ky = 0; ky < k; ++ky)
              for (int kx = 0; kx < k; ++kx) {
                const int iy = r * g.stride - g.pad + ky, ix = c * g.stride - g.pad + kx;
                if (iy < 0 || iy >= xs.h || ix < 0 || ix >= xs.w) continue;
                acc += double(x[((std::size_t(n) * xs.c + i) * xs.h + iy) * xs.w + ix]) *
                       w[((std::size_t(o) * xs.c + i) * k + ky) * k + kx];
              }
          y[((std::size_t(n) * g.out_channels + o) * oh + r) * ow + c] = float(acc);
        }
  return y;
}

// Reference transposed convolution (PyTorch ConvTranspose2d): x [N, Cin, H, W],
// w [Cin, Cout, k, k] (IOHW), bias [Cout] -> y [N, Cout, OH, OW].
inline std::vector<float> ref_deconv(const std::vector<float>& x, Shape4 xs,
                                     const std::vector<float>& w, const std::vector<float>& bias,
                                     const ConvGeometry& g) {
  const int oh = g.deconv_out(xs.h), ow = g.deconv_out(xs.w), k = g.kernel, co = g.out_channels;
  std::vector<double> acc(std::size_t(xs.n) * co * oh * ow, 0.0);
  for (int n = 0; n < xs.n; ++n)
    for (int i = 0; i < xs.c; ++i)
      for (int r = 0; r < xs.h; ++r)
        for (int c = 0; c < xs.w; ++c) {
          const double xv = x[((std::size_t(n) * xs.c + i) * xs.h + r) * xs.w + c];
          for (int o = 0; o < co; ++o)
            for (int ky = 0; ky < k; ++ky)
              for (int kx = 0; kx < k; ++kx) {
                const int oy = r * g.stride - g.pad + ky, ox = c * g.stride - g.pad + kx;
                if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
                acc[((std::size_t(n) * co + o) * oh + oy) * ow + ox] +=
                    xv * w[((std::size_t(i) * co + o) * k + ky) * k + kx];
              }
        }
  std::vector<float> y(acc.size());
  for (std::size_t j = 0; j < y.size(); ++j)
    y[j] = float(acc[j] + (bias.empty() ? 0.0 : bias[(j / (std::size_t(oh) * ow)) % co]));
  return y;
}

}  // namespace trainer::compute::test
