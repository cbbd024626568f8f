// Bicubic resize matrices (see bicubic_resize.hpp).
#include "model/bicubic_resize.hpp"

#include <algorithm>  // std::clamp, std::max, std::min
#include <cmath>      // std::floor, std::fabs

namespace trainer::model {
namespace {

constexpr double kA = -0.75;  // PyTorch's (and OpenCV's) cubic convolution constant

// Keys' cubic convolution weights of the four taps around a point at fraction t.
void cubic_weights(double t, double w[4]) {
  const auto near = [](double x) { return ((kA + 2) * x - (kA + 3)) * x * x + 1; };           // |x| <= 1
  const auto far = [](double x) { return ((kA * x - 5 * kA) * x + 8 * kA) * x - 4 * kA; };  // 1 < |x| < 2
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

}  // namespace

std::vector<double> bicubic_resize_matrix(int in, int out) {
  std::vector<double> m(std::size_t(out) * in, 0.0);
  const double scale = double(in) / out;
  for (int o = 0; o < out; ++o) {
    const double source = scale * (o + 0.5) - 0.5;  // not clamped at 0 for cubic, as ATen
    const double first = std::floor(source);
    double w[4];
    cubic_weights(source - first, w);
    for (int k = 0; k < 4; ++k) {
      const int i = std::clamp(int(first) - 1 + k, 0, in - 1);
      m[std::size_t(o) * in + i] += w[k];
    }
  }
  return m;
}

std::vector<double> antialiased_bicubic_resize_matrix(int in, int out, bool align_corners) {
  constexpr double a = -0.5;  // ATen's antialiasing filter (PIL's), not the -0.75 above
  const auto filter = [](double x) {
    x = std::fabs(x);
    if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return 0.0;
  };
  const double scale = align_corners ? (out > 1 ? double(in - 1) / (out - 1) : 0.0) : double(in) / out;
  const double support = scale >= 1 ? 2 * scale : 2.0, invscale = scale >= 1 ? 1 / scale : 1.0;
  std::vector<double> m(std::size_t(out) * in, 0.0);
  for (int o = 0; o < out; ++o) {
    const double center = scale * (o + 0.5);
    // ATen truncates toward zero here (a cast, not floor).
    const int first = std::max(static_cast<int>(center - support + 0.5), 0);
    const int last = std::min(static_cast<int>(center + support + 0.5), in);
    double total = 0;
    for (int i = first; i < last; ++i) total += filter((i - center + 0.5) * invscale);
    for (int i = first; i < last; ++i)
      m[std::size_t(o) * in + i] = total != 0 ? filter((i - center + 0.5) * invscale) / total : 0.0;
  }
  return m;
}

std::vector<float> bicubic_resize_matrix_2d(int in_h, int in_w, int out_h, int out_w) {
  const auto rows = bicubic_resize_matrix(in_h, out_h), cols = bicubic_resize_matrix(in_w, out_w);
  const int in = in_h * in_w;
  std::vector<float> m(std::size_t(out_h) * out_w * in);
  for (int oy = 0; oy < out_h; ++oy)
    for (int ox = 0; ox < out_w; ++ox)
      for (int iy = 0; iy < in_h; ++iy)
        for (int ix = 0; ix < in_w; ++ix)
          m[(std::size_t(oy) * out_w + ox) * in + std::size_t(iy) * in_w + ix] =
              float(rows[std::size_t(oy) * in_h + iy] * cols[std::size_t(ox) * in_w + ix]);
  return m;
}

}  // namespace trainer::model
