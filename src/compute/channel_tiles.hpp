#pragma once
// How the tiled fp32 NCHW batch-norm kernels (kernels/batchnorm_tiles.cuh) split a
// tensor over blocks and threads, written once for the kernels and for the unit test
// that walks every block and thread on the CPU (tests/unit/compute/test_channel_tiles.cpp).
// A thread keeps one channel and one column of float4s and walks down the images; a
// block covers `per_block` channels of `seg` threads each (several small planes, or
// one chunk of a large one). grid x = channel groups x column chunks, grid y = image
// groups. A channel's partial sums number chunks x image groups ("splits").
#include "compute/host_device.hpp"  // TRAINER_HOST_DEVICE

namespace trainer::compute {

constexpr int kTileThreads = 256;  // threads per block
constexpr int kTiledSplits = 64;   // at most this many partial sums per channel

struct ChannelTiles {
  int n = 0, c = 0;
  int plane4 = 0;     // float4 columns per plane
  int seg = 0;        // threads per channel in a block
  int per_block = 0;  // channels per block
  int chunks = 0;     // column chunks per channel
  int groups = 0;     // channel groups
  int images = 0;     // image groups (grid y)
  TRAINER_HOST_DEVICE unsigned grid_x() const { return unsigned(groups) * unsigned(chunks); }
  TRAINER_HOST_DEVICE unsigned grid_y() const { return unsigned(images); }
  TRAINER_HOST_DEVICE int splits() const { return chunks * images; }
};

// c > 0, plane > 0 and plane % 4 == 0 (the callers check; anything else gets no
// tiles, zero blocks). About `target_blocks` blocks; sums (`for_sums`) also keep at
// least `min_loads` float4s per thread where the batch allows, so a block's reduction
// is not most of its work, and at most kTiledSplits splits per channel.
inline ChannelTiles make_channel_tiles(int n, int c, int plane, int target_blocks, int min_loads, bool for_sums) {
  ChannelTiles t;
  if (c <= 0 || plane < 4 || plane % 4 || target_blocks < 1 || min_loads < 1) return t;
  t.n = n;
  t.c = c;
  t.plane4 = plane / 4;
  t.seg = t.plane4 < kTileThreads ? t.plane4 : kTileThreads;
  t.per_block = kTileThreads / t.seg;
  const int chunks = (t.plane4 + t.seg - 1) / t.seg;
  t.chunks = chunks < kTiledSplits ? chunks : kTiledSplits;
  t.groups = (c + t.per_block - 1) / t.per_block;
  const long long blocks_x = static_cast<long long>(t.groups) * t.chunks;
  long long images = (target_blocks + blocks_x - 1) / blocks_x;
  const long long loads_bound = (static_cast<long long>(n) + min_loads - 1) / min_loads;
  if (images > loads_bound) images = loads_bound;
  long long cap = n < 65535 ? n : 65535;  // grid y's limit
  if (for_sums && cap > kTiledSplits / t.chunks) cap = kTiledSplits / t.chunks;
  if (images > cap) images = cap;
  t.images = images < 1 ? 1 : static_cast<int>(images);
  return t;
}

// One thread's place: its channel, first float4 column and the stride to its next
// (when a plane has more columns than chunks x seg), its channel slot in the block and
// its index within the channel's `seg` threads. `active` is false past the block's
// channels; such threads still join the block's reduction.
struct TilePosition {
  int ch = 0, col = 0, col_stride = 0, local = 0, q = 0, split = 0;
  bool active = false;
};
TRAINER_HOST_DEVICE inline TilePosition tile_position(const ChannelTiles& t, int block_x, int block_y, int thread) {
  TilePosition p;
  p.local = thread / t.seg;
  p.q = thread % t.seg;
  const int group = block_x / t.chunks, chunk = block_x % t.chunks;
  p.ch = group * t.per_block + p.local;
  p.col = chunk * t.seg + p.q;
  p.col_stride = t.chunks * t.seg;
  p.split = chunk * t.images + block_y;
  p.active = p.local < t.per_block && p.ch < t.c;
  return p;
}

// The float4 at image `img`, channel `ch`, column `col` of an NCHW tensor.
TRAINER_HOST_DEVICE inline unsigned long long tile_float4_index(const ChannelTiles& t, int img, int ch, int col) {
  return (static_cast<unsigned long long>(img) * t.c + ch) * t.plane4 + col;
}

// The block's pairwise reduction of each channel's `seg` partials: at step `s`
// (width / 2, width / 4, ..., 1, width the power of two >= seg) thread q adds q + s's.
TRAINER_HOST_DEVICE inline int tile_reduction_width(int seg) {
  int width = 1;
  while (width < seg) width *= 2;
  return width;
}
TRAINER_HOST_DEVICE inline bool tile_adds_at(const ChannelTiles& t, const TilePosition& p, int s) {
  return p.local < t.per_block && p.q < s && p.q + s < t.seg;
}

}  // namespace trainer::compute
