// Distributed sampler (see sampler.hpp).
#include "data/sampler.hpp"

#include "data/rng.hpp"    // RngPurpose, KeyedRng
#include "data/split.hpp"  // permutation
#include "util/error.hpp"  // TRAINER_ASSERT

namespace trainer::data {

std::int64_t samples_per_rank(std::int64_t n, int num_replicas, bool drop_last) {
  TRAINER_ASSERT(num_replicas > 0, "num_replicas must be positive");
  if (drop_last) return n / num_replicas;  // == ceil((n - R) / R) of PyTorch for n % R != 0
  return (n + num_replicas - 1) / num_replicas;
}

std::uint64_t pass_seed(std::uint64_t seed, int pass) {
  TRAINER_ASSERT(pass >= 0, "pass " << pass);
  if (pass == 0) return seed;
  // Keyed like every other draw: by purpose and pass, never by rank or thread.
  return KeyedRng(seed, static_cast<std::uint64_t>(RngPurpose::kPass), static_cast<std::uint64_t>(pass)).next_u64();
}

std::vector<SampleRow> distributed_rows(const std::vector<std::int64_t>& frames, const SamplerOptions& options,
                                        int epoch) {
  TRAINER_ASSERT(options.rank >= 0 && options.rank < options.num_replicas, "rank out of range");
  const auto n = static_cast<std::int64_t>(frames.size());
  const std::int64_t per_rank = samples_per_rank(n, options.num_replicas, options.drop_last);
  const std::int64_t total = per_rank * options.num_replicas;
  std::vector<std::int64_t> order;
  if (options.shuffle) {
    order = permutation(n, options.seed, static_cast<std::uint64_t>(RngPurpose::kSampler),
                        static_cast<std::uint64_t>(epoch));
  } else {
    order.resize(static_cast<size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  }
  std::vector<SampleRow> rows;
  rows.reserve(static_cast<size_t>(per_rank));
  for (std::int64_t pos = options.rank; pos < total; pos += options.num_replicas) {
    // Padding repeats the order from its start (cyclically if it must wrap more than once).
    const std::int64_t p = n > 0 ? order[static_cast<size_t>(pos % n)] : 0;
    rows.push_back({frames[static_cast<size_t>(p)], pos < n});
  }
  return rows;
}

}  // namespace trainer::data
