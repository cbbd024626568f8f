#pragma once
// Helpers for the GPU tests: a CPU and a CUDA backend side by side, device copies
// of host vectors, and the error measure used against the CPU twin.
#include <algorithm>  // std::max
#include <cmath>      // std::fabs
#include <cstddef>    // std::size_t
#include <memory>     // std::unique_ptr
#include <random>     // std::mt19937
#include <vector>     // std::vector

#include "compute/backend.hpp"  // Backend, DeviceBuffer, make_cpu_backend, make_cuda_backend

namespace trainer::compute::gpu_test {

// fp32 parity with the CPU backend (TF32 off).
constexpr double kTolerance = 1e-5;

inline std::vector<float> random_vector(std::size_t n, unsigned seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// max |a - b| / max(max |b|, 1e-12): the error relative to the reference's scale.
inline double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 1e30;
  double num = 0, den = 1e-12;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num = std::max(num, std::fabs(double(a[i]) - b[i]));
    den = std::max(den, std::fabs(double(b[i])));
  }
  return num / den;
}

struct Twins {
  std::unique_ptr<Backend> cpu = make_cpu_backend(2);
  std::unique_ptr<Backend> gpu = make_cuda_backend(0);

  // A device copy of `host` (or `count` zeros).
  DeviceBuffer device(const std::vector<float>& host) {
    DeviceBuffer b(*gpu, host.size());
    gpu->upload(b.data(), host.data(), host.size(), gpu->default_stream());
    return b;
  }
  DeviceBuffer zeros(std::size_t count) { return DeviceBuffer(*gpu, count); }
  // Waits for the default stream and copies `count` floats back.
  std::vector<float> host(const float* device_ptr, std::size_t count) {
    std::vector<float> out(count);
    gpu->download(out.data(), device_ptr, count, gpu->default_stream());
    gpu->default_stream().synchronize();
    return out;
  }
  std::vector<float> host(const DeviceBuffer& b) { return host(b.data(), b.size()); }
  Stream& gs() { return gpu->default_stream(); }
  Stream& cs() { return cpu->default_stream(); }
};

}  // namespace trainer::compute::gpu_test
