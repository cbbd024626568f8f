// The split of an NCHW tensor that the tiled fp32 batch-norm kernels use
// (compute/channel_tiles.hpp, kernels/batchnorm_tiles.cuh), walked block by block and
// thread by thread on the CPU as the kernels walk it: every value is visited once,
// every channel's splits are written once each, and the block's pairwise reduction
// adds every thread of a channel exactly once.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "compute/channel_tiles.hpp"

using namespace trainer::compute;

namespace {

struct Walk {
  std::vector<int> visits;        // per float4 of the tensor
  std::vector<int> split_writes;  // per (split, channel)
  std::vector<double> partials;   // (split * c + ch): the sums the kernel would write
  int max_loads_per_thread = 0;
  int out_of_range = 0;  // indices past the tensor or the partials, partners in another channel
};

// What tiled_partials_kernel computes for the plain sum of each float4's first value
// `value(i)`, in its order: each thread adds its float4s, then each channel's seg
// threads add pairwise at the reduction's steps.
template <typename Value>
Walk walk(const ChannelTiles& t, Value value) {
  Walk w;
  w.visits.assign(std::size_t(t.n) * t.c * t.plane4, 0);
  w.split_writes.assign(std::size_t(t.splits()) * t.c, 0);
  w.partials.assign(w.split_writes.size(), 0.0);
  for (unsigned bx = 0; bx < t.grid_x(); ++bx) {
    for (unsigned by = 0; by < t.grid_y(); ++by) {
      std::vector<double> sums(kTileThreads, 0.0);
      std::vector<TilePosition> pos(kTileThreads);
      for (int th = 0; th < kTileThreads; ++th) {
        const TilePosition p = tile_position(t, int(bx), int(by), th);
        pos[th] = p;
        if (!p.active) continue;
        int loads = 0;
        for (int col = p.col; col < t.plane4; col += p.col_stride)
          for (int img = int(by); img < t.n; img += int(t.grid_y())) {
            const auto i = tile_float4_index(t, img, p.ch, col);
            if (i >= w.visits.size()) {
              ++w.out_of_range;
              continue;
            }
            ++w.visits[i];
            sums[th] += value(i);
            ++loads;
          }
        if (loads > w.max_loads_per_thread) w.max_loads_per_thread = loads;
      }
      for (int s = tile_reduction_width(t.seg) / 2; s > 0; s /= 2)
        for (int th = 0; th < kTileThreads; ++th)  // step by step, as the kernel's __syncthreads
          if (tile_adds_at(t, pos[th], s)) {
            if (th + s >= kTileThreads || pos[th + s].local != pos[th].local) {  // not the same channel's thread
              ++w.out_of_range;
              continue;
            }
            sums[th] += sums[th + s];
          }
      for (int th = 0; th < kTileThreads; ++th) {
        const TilePosition& p = pos[th];
        if (!p.active || p.q != 0) continue;
        if (p.split >= t.splits()) {
          ++w.out_of_range;
          continue;
        }
        const std::size_t k = std::size_t(p.split) * t.c + p.ch;
        ++w.split_writes[k];
        w.partials[k] = sums[th];
      }
    }
  }
  return w;
}

struct Case {
  int n, c, plane;
};

}  // namespace

TEST_CASE("tiled batch-norm kernels visit every value once and write every split once", "[tiles]") {
  // ResNet-50 at 256 x 256, batch 16 (stem 128^2, stages 64^2 ... 8^2), 14 x 14 planes
  // (49 float4s: channels that do not fill a block evenly), 1 x 4 planes, a batch
  // larger than the splits allow, planes with more float4 columns than 64 chunks of
  // 256 threads, and channel counts that leave the last block part empty.
  const Case cases[] = {{16, 64, 128 * 128}, {16, 256, 64 * 64},  {16, 512, 32 * 32}, {16, 1024, 16 * 16},
                        {16, 2048, 8 * 8},   {3, 300, 14 * 14},   {100, 17, 4},       {1, 5, 4},
                        {2, 3, 4 * 70000},   {64, 2048, 8 * 8},   {7, 33, 12},        {130, 2, 64 * 64}};
  for (const Case& k : cases) {
    INFO("n " << k.n << ", c " << k.c << ", plane " << k.plane);
    for (bool for_sums : {true, false}) {
      INFO((for_sums ? "sums" : "element-wise"));
      const ChannelTiles t = make_channel_tiles(k.n, k.c, k.plane, for_sums ? 2048 : 4096, for_sums ? 4 : 1, for_sums);
      CHECK(t.seg * t.per_block <= kTileThreads);
      CHECK(t.grid_y() <= 65535u);
      if (for_sums) CHECK(t.splits() <= kTiledSplits);
      const Walk w = walk(t, [](unsigned long long) { return 1.0; });
      CHECK(w.out_of_range == 0);
      int wrong_visits = 0, wrong_writes = 0;
      for (int v : w.visits) wrong_visits += v != 1;
      for (int v : w.split_writes) wrong_writes += v != 1;
      CHECK(wrong_visits == 0);
      CHECK(wrong_writes == 0);
      // Each channel's splits add up to its n * plane / 4 float4s.
      int wrong_totals = 0;
      for (int ch = 0; ch < k.c; ++ch) {
        double total = 0;
        for (int s = 0; s < t.splits(); ++s) total += w.partials[std::size_t(s) * k.c + ch];
        wrong_totals += total != double(k.n) * k.plane / 4;
      }
      CHECK(wrong_totals == 0);
    }
  }
}

TEST_CASE("tiled batch-norm sums keep a thread's loads, and the blocks, where the kernels want them", "[tiles]") {
  // The last stage of ResNet-50 at batch 16 (2048 channels of 8 x 8): the flat kernels
  // ran 32,768 blocks of one 64-value plane each; here 16 channels share a block and
  // each thread adds 4 float4s (min_loads) from 4 images.
  const ChannelTiles last = make_channel_tiles(16, 2048, 64, 2048, 4, true);
  CHECK(last.seg == 16);
  CHECK(last.per_block == 16);
  CHECK(last.grid_x() * last.grid_y() == 512u);
  CHECK(walk(last, [](unsigned long long) { return 0.0; }).max_loads_per_thread == 4);
  // The stem (64 channels of 128 x 128): 16 column chunks of 256 threads, two image
  // groups, 32 splits a channel, 8 float4s a thread.
  const ChannelTiles stem = make_channel_tiles(16, 64, 128 * 128, 2048, 4, true);
  CHECK(stem.chunks == 16);
  CHECK(stem.images == 2);
  CHECK(stem.splits() == 32);
  CHECK(walk(stem, [](unsigned long long) { return 0.0; }).max_loads_per_thread == 8);
  // What the callers never ask for gets no blocks rather than a division by zero.
  CHECK(make_channel_tiles(16, 0, 64, 2048, 4, true).grid_x() == 0u);
  CHECK(make_channel_tiles(16, 8, 6, 2048, 4, true).grid_x() == 0u);
}

TEST_CASE("tiled batch-norm sums in the kernels' order match a float64 sum", "[tiles]") {
  const int n = 16, c = 6, plane = 8 * 8;
  std::mt19937 rng(7);
  std::normal_distribution<double> dist(3.0, 2.0);
  std::vector<double> values(std::size_t(n) * c * plane / 4);
  for (double& v : values) v = float(dist(rng));
  const ChannelTiles t = make_channel_tiles(n, c, plane, 2048, 4, true);
  const Walk w = walk(t, [&](unsigned long long i) { return values[i]; });
  for (int ch = 0; ch < c; ++ch) {
    double kernel = 0, reference = 0;
    for (int s = 0; s < t.splits(); ++s) kernel += w.partials[std::size_t(s) * c + ch];
    for (int img = 0; img < n; ++img)
      for (int col = 0; col < plane / 4; ++col) reference += values[(std::size_t(img) * c + ch) * (plane / 4) + col];
    CHECK(std::fabs(kernel - reference) <= 1e-12 * std::fabs(reference) + 1e-12);
  }
}
