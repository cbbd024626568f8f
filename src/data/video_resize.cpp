#include "data/video_resize.hpp"

#include <algorithm>  // std::clamp, std::max, std::fill
#include <cmath>      // std::ceil, std::fabs

namespace trainer::data {

VideoResize::AxisTaps VideoResize::plan_axis(int in, int out) {
  AxisTaps t;
  t.in = in;
  t.out = out;
  const double scale = static_cast<double>(in) / out;
  const double r = std::max(1.0, scale);
  // Every source pixel strictly inside (s - r, s + r) fits in ceil(2r) taps from ceil(s - r).
  t.support = static_cast<int>(std::ceil(2.0 * r));
  t.index.resize(static_cast<std::size_t>(out) * t.support);
  t.weight.resize(t.index.size());
  std::vector<double> wk(static_cast<std::size_t>(t.support));
  for (int i = 0; i < out; ++i) {
    const double s = (i + 0.5) * scale - 0.5;
    const int first = static_cast<int>(std::ceil(s - r));
    double sum = 0.0;
    for (int k = 0; k < t.support; ++k) {
      wk[static_cast<std::size_t>(k)] = std::max(0.0, 1.0 - std::fabs(first + k - s) / r);
      sum += wk[static_cast<std::size_t>(k)];
    }
    for (int k = 0; k < t.support; ++k) {
      const std::size_t at = static_cast<std::size_t>(i) * t.support + k;
      t.index[at] = std::clamp(first + k, 0, in - 1);  // past the edge: the edge pixel
      t.weight[at] = static_cast<float>(sum > 0.0 ? wk[static_cast<std::size_t>(k)] / sum : 0.0);
    }
  }
  return t;
}

const float* VideoResize::run(const std::uint8_t* frame, int h, int w, int c, int out_h, int out_w) {
  if (rows_.in != h || rows_.out != out_h) rows_ = plan_axis(h, out_h);
  if (cols_.in != w || cols_.out != out_w) cols_ = plan_axis(w, out_w);
  const std::size_t row_values = static_cast<std::size_t>(w) * c;
  vertical_.resize(static_cast<std::size_t>(out_h) * row_values);
  result_.resize(static_cast<std::size_t>(out_h) * out_w * c);
  // Rows first: each output row is a weighted sum of whole source rows, a loop the
  // compiler vectorizes; the columns pass then works on out_h rows only.
  for (int i = 0; i < out_h; ++i) {
    float* acc = vertical_.data() + static_cast<std::size_t>(i) * row_values;
    std::fill(acc, acc + row_values, 0.0f);
    for (int k = 0; k < rows_.support; ++k) {
      const std::size_t at = static_cast<std::size_t>(i) * rows_.support + k;
      const float wk = rows_.weight[at];
      if (wk == 0.0f) continue;
      const std::uint8_t* src = frame + static_cast<std::size_t>(rows_.index[at]) * row_values;
      for (std::size_t j = 0; j < row_values; ++j) acc[j] += wk * static_cast<float>(src[j]);
    }
  }
  for (int i = 0; i < out_h; ++i) {
    const float* row = vertical_.data() + static_cast<std::size_t>(i) * row_values;
    float* out = result_.data() + static_cast<std::size_t>(i) * out_w * c;
    for (int x = 0; x < out_w; ++x) {
      const int* index = cols_.index.data() + static_cast<std::size_t>(x) * cols_.support;
      const float* weight = cols_.weight.data() + static_cast<std::size_t>(x) * cols_.support;
      for (int ch = 0; ch < c; ++ch) {
        float sum = 0.0f;
        for (int k = 0; k < cols_.support; ++k) sum += weight[k] * row[static_cast<std::size_t>(index[k]) * c + ch];
        out[static_cast<std::size_t>(x) * c + ch] = sum;
      }
    }
  }
  return result_.data();
}

}  // namespace trainer::data
