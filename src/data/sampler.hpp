#pragma once
// Distributed sampler with PyTorch DistributedSampler semantics, so every rank runs
// the same number of steps (uneven counts are the classic hang):
//   - order: shuffled with (seed, epoch) when shuffle, else 0..n-1;
//   - drop_last = false: pad to a multiple of the world size by repeating from the
//     start of that order (padded rows are marked is_real = false so metrics can
//     exclude them); drop_last = true: truncate to a multiple of the world size;
//   - rank r takes positions r, r + R, r + 2R, ...
// The shuffle is our own keyed permutation, not torch's randperm stream.
#include <cstdint>  // std::int64_t, std::uint64_t
#include <vector>   // std::vector

namespace trainer::data {

struct SampleRow {
  std::int64_t frame = 0;  // global frame index (after mapping through the split list)
  bool is_real = true;     // false for rows the sampler added as padding
};

struct SamplerOptions {
  int num_replicas = 1;
  int rank = 0;
  bool shuffle = true;
  std::uint64_t seed = 0;
  bool drop_last = false;
};

// Rows one rank sees per epoch: ceil(n / R) without drop_last, floor(n / R) with.
std::int64_t samples_per_rank(std::int64_t n, int num_replicas, bool drop_last);

// The seed of pass `pass` (0, 1, ...) over the labelled frames within one epoch, for
// the sampler's order and the loader's augmentation. Semi-supervised epochs cycle the
// frames (train/epoch_length.hpp); each pass is reshuffled and augmented anew, as
// lightning-pose's restarted DataLoader draws a new permutation and new augmentations
// on one GPU. Pass 0 keeps `seed`: a one-pass epoch draws what it always drew.
std::uint64_t pass_seed(std::uint64_t seed, int pass);

// The rows of `rank` for `epoch`, drawn from `frames` (e.g. a split's frame list).
std::vector<SampleRow> distributed_rows(const std::vector<std::int64_t>& frames, const SamplerOptions& options,
                                        int epoch);

}  // namespace trainer::data
