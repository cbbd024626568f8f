#pragma once
// A small counter-based random source. Every random draw in the data layer is
// keyed by what it is for (seed, epoch, frame index, ...), never by which thread or
// rank asks, so results do not depend on the number of workers or ranks. Unlike the
// <random> distributions, the values are the same on every platform.
#include <cmath>    // std::log, std::sqrt, std::cos
#include <cstdint>  // std::uint64_t

namespace trainer::data {

// SplitMix64 finalizer: a good 64-bit mixing function.
inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

class KeyedRng {
 public:
  explicit KeyedRng(std::uint64_t a, std::uint64_t b = 0, std::uint64_t c = 0, std::uint64_t d = 0)
      : state_(mix64(mix64(mix64(mix64(a) ^ b) ^ c) ^ d)) {}

  std::uint64_t next_u64() {
    state_ += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0); }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, n).
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next_u64() % n; }
  bool chance(double p) { return uniform() < p; }
  // Standard normal (Box-Muller; one value per call keeps the stream simple).
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  std::uint64_t state_;
};

// Purpose tags so that draws for different jobs never share a stream.
enum class RngPurpose : std::uint64_t { kSplit = 1, kSampler = 2, kAugment = 3, kSynth = 4, kFlip = 5, kUnlabeled = 6,
                                      kUnlabeledAugment = 7, kUnlabeledNoise = 8, kPass = 9 };

}  // namespace trainer::data
