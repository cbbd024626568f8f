// Distributed sampler: PyTorch DistributedSampler padding, truncation, rank partition.
#include <catch2/catch.hpp>

#include <algorithm>  // std::sort
#include <map>  // std::map

#include "data/sampler.hpp"

using namespace trainer::data;

namespace {
std::vector<std::int64_t> frames_of(std::int64_t n) {
  std::vector<std::int64_t> f;
  for (std::int64_t i = 0; i < n; ++i) f.push_back(100 + i);  // not 0..n-1, to catch index/frame mixups
  return f;
}
}  // namespace

TEST_CASE("sampler without shuffle follows PyTorch's padding and rank stride", "[data]") {
  // n = 10, R = 4: padded order 0..9,0,1; rank r takes r, r+4, r+8.
  const auto frames = frames_of(10);
  SamplerOptions o;
  o.num_replicas = 4;
  o.shuffle = false;
  std::vector<std::vector<std::int64_t>> want = {{100, 104, 108}, {101, 105, 109}, {102, 106, 100}, {103, 107, 101}};
  for (int r = 0; r < 4; ++r) {
    o.rank = r;
    const auto rows = distributed_rows(frames, o, 0);
    REQUIRE(rows.size() == 3);
    for (size_t i = 0; i < 3; ++i) CHECK(rows[i].frame == want[static_cast<size_t>(r)][i]);
    CHECK(rows[2].is_real == (r < 2));  // positions 10, 11 are padding
  }
  o.drop_last = true;  // truncate to 8: rank r takes r, r+4
  for (int r = 0; r < 4; ++r) {
    o.rank = r;
    const auto rows = distributed_rows(frames, o, 0);
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].frame == 100 + r);
    CHECK(rows[1].frame == 104 + r);
    CHECK(rows[0].is_real);
  }
}

TEST_CASE("sampler partitions every frame exactly once across ranks", "[data]") {
  for (std::int64_t n : {1, 2, 7, 10, 16, 33}) {
    for (int R : {1, 2, 3, 4, 8}) {
      for (bool drop_last : {false, true}) {
        for (int epoch : {0, 3}) {
          INFO("n=" << n << " R=" << R << " drop_last=" << drop_last << " epoch=" << epoch);
          const auto frames = frames_of(n);
          SamplerOptions o;
          o.num_replicas = R;
          o.drop_last = drop_last;
          o.seed = 42;
          std::map<std::int64_t, int> real_count;
          size_t per_rank = 0;
          for (int r = 0; r < R; ++r) {
            o.rank = r;
            const auto rows = distributed_rows(frames, o, epoch);
            if (r == 0) per_rank = rows.size();
            REQUIRE(rows.size() == per_rank);  // every rank the same number of steps
            REQUIRE(static_cast<std::int64_t>(rows.size()) == samples_per_rank(n, R, drop_last));
            for (const auto& row : rows) {
              REQUIRE(row.frame >= 100);
              REQUIRE(row.frame < 100 + n);
              if (row.is_real) ++real_count[row.frame];
            }
          }
          if (drop_last) {
            CHECK(static_cast<std::int64_t>(real_count.size()) == (n / R) * R);
          } else {
            CHECK(per_rank == static_cast<size_t>((n + R - 1) / R));
            CHECK(static_cast<std::int64_t>(real_count.size()) == n);  // every frame seen
          }
          for (const auto& [frame, count] : real_count) CHECK(count == 1);  // never double-counted
        }
      }
    }
  }
}

TEST_CASE("sampler shuffles by seed and epoch", "[data]") {
  const auto frames = frames_of(50);
  SamplerOptions o;
  o.seed = 1;
  const auto a = distributed_rows(frames, o, 0), b = distributed_rows(frames, o, 0), c = distributed_rows(frames, o, 1);
  auto frames_in = [](const std::vector<SampleRow>& rows) {
    std::vector<std::int64_t> f;
    for (const auto& r : rows) f.push_back(r.frame);
    return f;
  };
  CHECK(frames_in(a) == frames_in(b));
  CHECK(frames_in(a) != frames_in(c));
  CHECK(frames_in(a) != frames);
}

TEST_CASE("a further pass within an epoch is reshuffled; pass 0 is the epoch's usual order", "[data][sampler]") {
  std::vector<std::int64_t> frames(40);
  for (std::int64_t i = 0; i < 40; ++i) frames[std::size_t(i)] = 100 + i;
  SamplerOptions o;
  o.seed = 7;
  CHECK(pass_seed(7, 0) == 7);  // one-pass epochs draw what they always drew
  CHECK(pass_seed(7, 1) != pass_seed(7, 2));
  const auto first = distributed_rows(frames, o, 3);
  SamplerOptions again = o;
  again.seed = pass_seed(o.seed, 1);
  const auto second = distributed_rows(frames, again, 3);
  REQUIRE(second.size() == first.size());
  bool differs = false;
  std::vector<std::int64_t> a, b;
  for (std::size_t i = 0; i < first.size(); ++i) {
    differs = differs || first[i].frame != second[i].frame;
    a.push_back(first[i].frame);
    b.push_back(second[i].frame);
  }
  CHECK(differs);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  CHECK(a == b);  // each pass visits every frame once
}
