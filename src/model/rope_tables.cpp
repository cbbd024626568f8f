// DINOv3's RoPE tables and its train-time coordinate rescale (see rope_tables.hpp).
#include "model/rope_tables.hpp"

#include <cmath>    // std::exp, std::log, std::pow
#include <cstdint>  // std::uint64_t
#include <string>   // std::to_string

#include "compute/rotary_rule.hpp"         // rotary_angle, rotary_cos_sin
#include "compute/rotary_shape_check.hpp"  // check_rotary_table_shape
#include "util/error.hpp"           // SystemError

namespace trainer::model {

RopeTables rope_tables(int grid_h, int grid_w, int head_dim, float theta) {
  compute::check_rotary_table_shape(grid_h, grid_w, head_dim);
  const int quarter = head_dim / 4, half = head_dim / 2;
  // float32 throughout, as transformers computes them under autocast(enabled=False).
  RopeTables t;
  t.inv_freq.resize(static_cast<std::size_t>(quarter));
  const float step = 4.f / float(head_dim);
  for (int j = 0; j < quarter; ++j)
    t.inv_freq[std::size_t(j)] = 1.f / static_cast<float>(std::pow(double(theta), double(float(j) * step)));
  t.cos.resize(std::size_t(grid_h) * grid_w * half);
  t.sin.resize(t.cos.size());
  for (int y = 0; y < grid_h; ++y)
    for (int x = 0; x < grid_w; ++x) {
      const std::size_t row = (std::size_t(y) * grid_w + x) * half;
      for (int i = 0; i < half; ++i) {
        const float angle =
            compute::rotary_angle(y, x, i, grid_h, grid_w, quarter, t.inv_freq[std::size_t(i % quarter)], 1.f);
        compute::rotary_cos_sin(angle, t.cos[row + i], t.sin[row + i]);
      }
    }
  return t;
}

namespace {

// SplitMix64's finaliser: a bijective mix, so distinct inputs give distinct outputs.
std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

float rope_rescale_draw(const StepKey& key, int forward, float rescale) {
  if (!(rescale > 1.f)) throw SystemError("internal error: RoPE rescale " + std::to_string(rescale));
  std::uint64_t h = mix(key.seed + 0x9e3779b97f4a7c15ULL);
  h = mix(h ^ static_cast<std::uint64_t>(key.epoch));
  h = mix(h ^ static_cast<std::uint64_t>(key.batch));
  h = mix(h ^ static_cast<std::uint64_t>(forward) ^ 0x524f5045ULL);  // "ROPE": this draw's own stream
  const double u = double(h >> 11) * 0x1.0p-53;                        // uniform in [0, 1)
  const double range = std::log(double(rescale));
  return float(std::exp((2.0 * u - 1.0) * range));
}

}  // namespace trainer::model
