// Split sizes and assignment (see split.hpp).
#include "data/split.hpp"

#include <cmath>    // std::floor, std::fabs, std::nearbyint
#include <sstream>  // std::ostringstream
#include <numeric>  // std::iota

#include "data/rng.hpp"    // KeyedRng
#include "util/atomic_write.hpp"  // write_file_atomically
#include "util/error.hpp"  // UserError
#include "util/csv_field.hpp"  // csv_field

namespace trainer::data {

SplitSizes split_sizes_from_probabilities(std::int64_t total, double train_prob, std::optional<double> val_prob,
                                          std::optional<double> test_prob) {
  double val = 0.0, test = 0.0;
  if (!val_prob && !test_prob) {
    // Rounded to 5 decimals as lightning-pose does (1 - 0.8 is 0.19999999999999996).
    val = std::nearbyint((1.0 - train_prob) / 2.0 * 1e5) / 1e5;
    test = val;
  } else if (!test_prob) {
    val = *val_prob;
    test = 1.0 - train_prob - val;
  } else if (!val_prob) {
    test = *test_prob;
    val = 1.0 - train_prob - test;
  } else {
    val = *val_prob;
    test = *test_prob;
  }
  if (train_prob <= 0.0 || val < -1e-9 || test < -1e-9 || std::fabs(train_prob + val + test - 1.0) > 1e-6)
    throw UserError("train_prob (" + std::to_string(train_prob) + ") and val_prob (" + std::to_string(val) +
                        ") must be positive and add up to at most 1",
                    "e.g. train_prob = 0.95, val_prob = 0.05");
  SplitSizes s;
  s.train = static_cast<std::int64_t>(std::floor(train_prob * static_cast<double>(total)));
  s.val = static_cast<std::int64_t>(std::floor(val * static_cast<double>(total)));
  s.test = total - s.train - s.val;
  if (s.test < 5) {  // too few to be a useful test set: give them to train
    s.test = 0;
    s.train = total - s.val;
  }
  if (s.val == 0) {
    s.train -= 1;
    s.val = 1;
  }
  if (s.train < 1)
    throw UserError("the dataset has " + std::to_string(total) +
                        " labeled frame(s): a split needs at least one training and one validation frame",
                    "label more frames");
  return s;
}

std::vector<std::int64_t> permutation(std::int64_t n, std::uint64_t seed, std::uint64_t purpose,
                                      std::uint64_t extra) {
  std::vector<std::int64_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  KeyedRng rng(seed, purpose, extra);
  for (std::int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(i + 1)));
    std::swap(p[static_cast<size_t>(i)], p[static_cast<size_t>(j)]);
  }
  return p;
}

Split make_split(std::int64_t total, const SplitSizes& sizes, std::uint64_t seed) {
  TRAINER_ASSERT(sizes.train + sizes.val + sizes.test == total, "split sizes do not add up");
  const auto p = permutation(total, seed, static_cast<std::uint64_t>(RngPurpose::kSplit));
  Split s;
  s.train.assign(p.begin(), p.begin() + sizes.train);
  s.val.assign(p.begin() + sizes.train, p.begin() + sizes.train + sizes.val);
  s.test.assign(p.begin() + sizes.train + sizes.val, p.end());
  return s;
}

std::int64_t train_frames_to_use(std::int64_t train_size, double train_frames) {
  if (!(train_frames > 0)) throw UserError("training.train_frames must be > 0");
  if (train_frames >= static_cast<double>(train_size) || train_frames == 1.0) return train_size;
  if (train_frames > 1.0) return static_cast<std::int64_t>(train_frames);
  return static_cast<std::int64_t>(train_frames * static_cast<double>(train_size));
}

std::vector<std::string> set_names(const Split& split, std::int64_t total) {
  std::vector<std::string> names(static_cast<size_t>(total), "unused");
  for (auto i : split.train) names[static_cast<size_t>(i)] = "train";
  for (auto i : split.val) names[static_cast<size_t>(i)] = "val";
  for (auto i : split.test) names[static_cast<size_t>(i)] = "test";
  return names;
}

void check_batch_fits(const std::string& set, std::int64_t frames, int global_batch, bool drop_last,
                      const std::string& data_file) {
  if (frames <= 0)
    throw UserError("the " + set + " split of " + data_file + " is empty",
                    "label more frames or change training.train_prob / training.val_prob");
  if (global_batch > frames) {
    throw UserError("the " + set + " batch size (" + std::to_string(global_batch) + ") is larger than the " + set +
                        " split of " + data_file + " (" + std::to_string(frames) + " frames)" +
                        (drop_last ? ": with drop_last there would be no batch at all" : ""),
                    "lower the batch size to at most " + std::to_string(frames) + " or label more frames");
  }
}

void write_split_csv(const std::string& path, const Split& split, const std::vector<std::string>& frame_paths) {
  const auto total = static_cast<std::int64_t>(frame_paths.size());
  const auto names = set_names(split, total);
  std::ostringstream out;
  out << "index,frame_path,set\n";
  for (std::int64_t i = 0; i < total; ++i)
    out << i << ',' << csv_field(frame_paths[static_cast<size_t>(i)]) << ',' << names[static_cast<size_t>(i)] << '\n';
  write_file_atomically(path, out.str());
}

}  // namespace trainer::data
