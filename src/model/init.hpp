#pragma once
// Deterministic random initialization that does not depend on the C++ standard
// library's distributions (whose algorithms differ between implementations):
// SplitMix64 seeding a xoshiro256** generator, uniform floats from the top 24
// bits, normals by the Box-Muller transform. Same seed, same weights everywhere.
#include <cstdint>  // std::uint64_t

namespace trainer::model {

class InitRng {
 public:
  explicit InitRng(std::uint64_t seed);
  std::uint64_t next_u64();
  double uniform();                  // [0, 1)
  double uniform(double lo, double hi);
  double normal();                   // mean 0, std 1

 private:
  std::uint64_t s_[4];
  bool has_spare_ = false;
  double spare_ = 0;
};

}  // namespace trainer::model
