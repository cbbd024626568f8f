// Split sizes (lightning-pose's split_sizes_from_probabilities) and assignment.
#include <catch2/catch.hpp>

#include <algorithm>  // std::sort
#include <fstream>    // std::ifstream

#include "data/split.hpp"
#include "scratch_dir.hpp"
#include "util/error.hpp"

using namespace trainer::data;

namespace {
void check_sizes(std::int64_t n, double train, std::optional<double> val, std::int64_t t, std::int64_t v,
                 std::int64_t s) {
  const SplitSizes got = split_sizes_from_probabilities(n, train, val);
  INFO("n=" << n << " train_prob=" << train);
  CHECK(got.train == t);
  CHECK(got.val == v);
  CHECK(got.test == s);
}
}  // namespace

TEST_CASE("split sizes match lightning-pose's vectors", "[data]") {
  check_sizes(100, 0.8, std::nullopt, 80, 10, 10);
  check_sizes(100, 0.7, std::nullopt, 70, 15, 15);
  check_sizes(101, 0.7, std::nullopt, 70, 15, 16);
  check_sizes(10, 0.95, 0.05, 9, 1, 0);
  check_sizes(100, 0.8, 0.1, 80, 10, 10);
  check_sizes(90, 0.95, 0.05, 86, 4, 0);  // mirror-mouse: leftover 1 < 5 goes to train
  check_sizes(2, 0.95, 0.05, 1, 1, 0);
  CHECK_THROWS_AS(split_sizes_from_probabilities(1, 0.95, 0.05), trainer::UserError);
  CHECK_THROWS_AS(split_sizes_from_probabilities(100, 0.9, 0.3), trainer::UserError);
}

TEST_CASE("split is a seeded partition of all frames", "[data]") {
  const auto sizes = split_sizes_from_probabilities(101, 0.7);
  const Split a = make_split(101, sizes, 7), b = make_split(101, sizes, 7), c = make_split(101, sizes, 8);
  CHECK(a.train == b.train);
  CHECK(a.val == b.val);
  CHECK(a.train != c.train);
  std::vector<std::int64_t> all = a.train;
  all.insert(all.end(), a.val.begin(), a.val.end());
  all.insert(all.end(), a.test.begin(), a.test.end());
  std::sort(all.begin(), all.end());
  for (std::int64_t i = 0; i < 101; ++i) REQUIRE(all[static_cast<size_t>(i)] == i);
}

TEST_CASE("split.csv lists every frame with its set", "[data]") {
  testing::ScratchDir dir("split");
  const auto sizes = split_sizes_from_probabilities(12, 0.5);
  const Split s = make_split(12, sizes, 0);
  std::vector<std::string> paths;
  for (int i = 0; i < 12; ++i) paths.push_back("labeled-data/img" + std::to_string(i) + ".png");
  paths[3] = "odd,name.png";
  write_split_csv(dir.file("split.csv"), s, paths);
  std::ifstream in(dir.file("split.csv"));
  std::string line;
  std::getline(in, line);
  CHECK(line == "index,frame_path,set");
  const auto names = set_names(s, 12);
  for (int i = 0; i < 12; ++i) {
    REQUIRE(std::getline(in, line));
    const std::string path = i == 3 ? "\"odd,name.png\"" : paths[static_cast<size_t>(i)];
    CHECK(line == std::to_string(i) + "," + path + "," + names[static_cast<size_t>(i)]);
  }
  CHECK_FALSE(std::getline(in, line));
}

TEST_CASE("train_frames: lightning-pose's compute_num_train_frames", "[data][split]") {
  using trainer::data::train_frames_to_use;
  CHECK(train_frames_to_use(72, 1.0) == 72);    // 1 is "all", not one frame
  CHECK(train_frames_to_use(72, 0.5) == 36);    // a fraction, floored
  CHECK(train_frames_to_use(72, 0.99) == 71);
  CHECK(train_frames_to_use(72, 10.0) == 10);   // a count
  CHECK(train_frames_to_use(72, 10.7) == 10);
  CHECK(train_frames_to_use(72, 500.0) == 72);  // more than there are: all
  CHECK_THROWS_AS(train_frames_to_use(72, 0.0), trainer::UserError);
}
