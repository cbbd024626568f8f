// DINOv3's RoPE tables (see rope_tables.hpp).
#include "model/rope_tables.hpp"

#include <cmath>   // std::cos, std::sin, std::pow
#include <string>  // std::to_string

#include "util/error.hpp"  // SystemError

namespace trainer::model {

RopeTables rope_tables(int grid_h, int grid_w, int head_dim, float theta) {
  if (grid_h <= 0 || grid_w <= 0 || head_dim <= 0 || head_dim % 4 != 0)
    throw SystemError("internal error: RoPE tables for a " + std::to_string(grid_h) + " x " + std::to_string(grid_w) +
                      " grid and head width " + std::to_string(head_dim));
  const int quarter = head_dim / 4, half = head_dim / 2;
  // float32 throughout, as transformers computes them under autocast(enabled=False).
  std::vector<float> inv_freq(static_cast<std::size_t>(quarter));
  const float step = 4.f / float(head_dim);
  for (int j = 0; j < quarter; ++j)
    inv_freq[std::size_t(j)] = 1.f / static_cast<float>(std::pow(double(theta), double(float(j) * step)));
  const auto centre = [](int i, int n) { return 2.f * ((float(i) + 0.5f) / float(n)) - 1.f; };
  const float two_pi = float(2.0 * 3.14159265358979323846);
  RopeTables t;
  t.cos.resize(std::size_t(grid_h) * grid_w * half);
  t.sin.resize(t.cos.size());
  for (int y = 0; y < grid_h; ++y)
    for (int x = 0; x < grid_w; ++x) {
      const float coord[2] = {centre(y, grid_h), centre(x, grid_w)};
      const std::size_t row = (std::size_t(y) * grid_w + x) * half;
      for (int i = 0; i < half; ++i) {
        const float angle = (two_pi * coord[i / quarter]) * inv_freq[std::size_t(i % quarter)];
        t.cos[row + i] = float(std::cos(double(angle)));
        t.sin[row + i] = float(std::sin(double(angle)));
      }
    }
  return t;
}

}  // namespace trainer::model
