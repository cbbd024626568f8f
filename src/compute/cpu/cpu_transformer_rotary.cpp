// CpuTransformerOps' rotary position embedding (transformer_ops.hpp): one OpenMP
// loop over (image, patch token) rows, each turning every head's pairs in place,
// and the loop that makes its tables, with the formulas the CUDA kernels share
// (compute/rotary_rule.hpp).
#include <cstddef>  // std::size_t

#include "compute/cpu/cpu_transformer_ops.hpp"
#include "compute/rotary_rule.hpp"         // rotate_pair, rotary_angle, rotary_cos_sin
#include "compute/rotary_shape_check.hpp"  // check_rotary_shape, check_rotary_table_shape

namespace trainer::compute::cpu {
namespace {

void rotate_rows(float* x, const float* cos, const float* sin, const RotaryShape& r, bool inverse) {
  const int half = r.head_dim / 2, patches = r.patches(), width = r.heads * r.head_dim;
  const long long rows = static_cast<long long>(r.batch) * patches;
#pragma omp parallel for schedule(static)
  for (long long row = 0; row < rows; ++row) {
    const int image = int(row / patches), p = int(row % patches);
    float* token = x + (std::size_t(image) * r.tokens + r.prefix + p) * width;
    const float* c = cos + std::size_t(p) * half;
    const float* s = sin + std::size_t(p) * half;
    for (int h = 0; h < r.heads; ++h) {
      float* head = token + std::size_t(h) * r.head_dim;
      for (int i = 0; i < half; ++i) rotate_pair(head[i], head[i + half], c[i], s[i], inverse);
    }
  }
}

}  // namespace

void CpuTransformerOps::rotary_forward(float* x, const float* cos, const float* sin, const RotaryShape& r, Stream&) {
  check_rotary_shape(r);
  enter();
  rotate_rows(x, cos, sin, r, /*inverse=*/false);
}

void CpuTransformerOps::rotary_backward(float* dy, const float* cos, const float* sin, const RotaryShape& r,
                                        Stream&) {
  check_rotary_shape(r);
  enter();
  rotate_rows(dy, cos, sin, r, /*inverse=*/true);
}

void CpuTransformerOps::rotary_tables(const float* scale, const float* inv_freq, float* cos, float* sin, int grid_h,
                                      int grid_w, int head_dim, Stream&) {
  check_rotary_table_shape(grid_h, grid_w, head_dim);
  enter();
  const int half = head_dim / 2, quarter = head_dim / 4;
  const float factor = *scale;
#pragma omp parallel for schedule(static)
  for (int p = 0; p < grid_h * grid_w; ++p) {
    const int y = p / grid_w, x = p % grid_w;
    for (int i = 0; i < half; ++i) {
      const std::size_t t = std::size_t(p) * half + i;
      rotary_cos_sin(rotary_angle(y, x, i, grid_h, grid_w, quarter, inv_freq[i % quarter], factor), cos[t], sin[t]);
    }
  }
}

}  // namespace trainer::compute::cpu
