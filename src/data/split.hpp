#pragma once
// Train/val/test split, exactly as lightning-pose's split_sizes_from_probabilities,
// with a permutation seeded by training.rng_seed_data_pt, and split.csv output.
#include <cstdint>   // std::int64_t, std::uint64_t
#include <optional>  // std::optional
#include <string>    // std::string
#include <vector>    // std::vector

namespace trainer::data {

struct SplitSizes {
  std::int64_t train = 0, val = 0, test = 0;
};

// lightning-pose rules: with no val/test probability the rest is shared equally
// (rounded to 5 decimals);
// train and val counts are floored; leftovers (test) of fewer than 5 frames go to
// train; at least one val frame (taken from train). Fewer than 2 frames, or
// probabilities that do not add up to 1, are a UserError.
SplitSizes split_sizes_from_probabilities(std::int64_t total, double train_prob,
                                          std::optional<double> val_prob = std::nullopt,
                                          std::optional<double> test_prob = std::nullopt);

// Global frame indices of each set. The permutation of 0..N-1 is seeded by `seed`;
// train takes the first sizes.train entries, val the next, test the rest (the
// order of torch.utils.data.random_split). Each set is in permutation order.
struct Split {
  std::vector<std::int64_t> train, val, test;
};
Split make_split(std::int64_t total, const SplitSizes& sizes, std::uint64_t seed);

// lightning-pose's training.train_frames (compute_num_train_frames): how many of the
// `train_size` train frames to use. 1 (or any value >= train_size): all; > 1: that
// many (whole part); in (0, 1): that fraction, floored. The split keeps the first
// ones of its (random) train order; the rest are "unused".
std::int64_t train_frames_to_use(std::int64_t train_size, double train_frames);

// "train", "val" or "test" for each frame (size N), from a split.
std::vector<std::string> set_names(const Split& split, std::int64_t total);

// Writes split.csv (index,frame_path,set) atomically (temp file + rename), sorted
// by index. frame_paths has one entry per frame.
void write_split_csv(const std::string& path, const Split& split, const std::vector<std::string>& frame_paths);

// Checks that a set can feed batches of `global_batch` frames: an empty set, or a
// batch larger than the set, is a UserError naming the data file and the set. Call
// it for the training set (and for val/test where partial batches are not wanted).
void check_batch_fits(const std::string& set, std::int64_t frames, int global_batch, bool drop_last,
                      const std::string& data_file);

// A deterministic permutation of 0..n-1 (Fisher-Yates on a keyed stream).
std::vector<std::int64_t> permutation(std::int64_t n, std::uint64_t seed, std::uint64_t purpose,
                                      std::uint64_t extra = 0);

}  // namespace trainer::data
