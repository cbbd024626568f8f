#pragma once
// Helpers for model tests: a small CPU backend and random host tensors.
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "compute/backend.hpp"
#include "model/heatmap_model.hpp"

namespace model_test {

inline std::unique_ptr<trainer::compute::Backend> cpu() { return trainer::compute::make_cpu_backend(2); }

inline std::vector<float> random_vector(std::size_t n, std::uint32_t seed, float scale = 1.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = scale * u(gen);
  return v;
}

// Keypoints [n, k, 2] in network-input pixels, inside a size x size image.
inline std::vector<float> random_keypoints(int n, int k, int size, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(2.f, float(size) - 3.f);
  std::vector<float> v(std::size_t(n) * k * 2);
  for (auto& x : v) x = u(gen);
  return v;
}

}  // namespace model_test
