// Kernels over 16-bit NHWC activations; see nhwc16.cuh.
#include "nhwc16.cuh"

#include <algorithm>         // std::max
#include <cmath>             // INFINITY
#include <cstdint>           // std::uint16_t
#include <initializer_list>  // std::initializer_list (packs_of_8)

#include "compute/batchnorm_apply_rule.hpp"  // batchnorm_affine_of, batchnorm_affine, relu_masked, ...
#include "compute/batchnorm_moments.hpp"      // store_moments
#include "compute/float16.hpp"                // f16::bf16_to_float, float_to_bf16, half_to_float, float_to_half
#include "batchnorm_backward_rule.cuh"         // BackwardApplyRule
#include "channel_partials.cuh"                // channel_partials_sum_kernel, finalize_stored_channel
#include "launch.cuh"                          // blocks_for, kThreads
#include "pool_window.cuh"                     // window_argmax, covering_outputs

namespace trainer::kernels {
namespace {

using detail::blocks_for;
using detail::kThreads;

// ---- 16-bit values and 16-byte packs ------------------------------------------

template <Format16 F>
struct Codec;
template <>
struct Codec<Format16::bf16> {
  __device__ static float load(std::uint16_t v) { return compute::f16::bf16_to_float(v); }
  __device__ static std::uint16_t store(float v) { return compute::f16::float_to_bf16(v); }
};
template <>
struct Codec<Format16::fp16> {
  __device__ static float load(std::uint16_t v) { return compute::f16::half_to_float(v); }
  __device__ static std::uint16_t store(float v) { return compute::f16::float_to_half(v); }
};

// VEC consecutive values; VEC = 8 is one 16-byte load or store.
template <int VEC>
struct alignas(VEC * 2) Pack {
  std::uint16_t v[VEC];
};
template <int VEC>
__device__ inline Pack<VEC> load_pack(const std::uint16_t* p) {
  return *reinterpret_cast<const Pack<VEC>*>(p);
}
template <int VEC>
__device__ inline void store_pack(std::uint16_t* p, const Pack<VEC>& v) {
  *reinterpret_cast<Pack<VEC>*>(p) = v;
}

template <Format16 F_, int VEC_>
struct Variant {
  static constexpr Format16 F = F_;
  static constexpr int VEC = VEC_;
};

// Whether 8-wide packs (16-byte loads and stores) fit: `groups_of_8` (channels or
// elements a multiple of 8) and every non-null pointer 16-byte aligned. Every 16-bit
// view starts a device allocation today; an offset view would take one value per
// thread instead of faulting on a misaligned address.
bool packs_of_8(bool groups_of_8, std::initializer_list<const void*> pointers) {
  for (const void* p : pointers)
    if (!detail::aligned16(p)) return false;
  return groups_of_8;
}

// Runs launch(Variant<format, vec>{}) with 8-wide packs when `groups_of_8` holds.
template <typename Launch>
void dispatch(Format16 f, bool groups_of_8, Launch&& launch) {
  if (f == Format16::bf16) {
    if (groups_of_8) launch(Variant<Format16::bf16, 8>{});
    else launch(Variant<Format16::bf16, 1>{});
  } else {
    if (groups_of_8) launch(Variant<Format16::fp16, 8>{});
    else launch(Variant<Format16::fp16, 1>{});
  }
}

// ---- per-channel sums ------------------------------------------------------------
// Grid (splits, chunks) of 1-D blocks seen as tx channel lanes (VEC channels each)
// by ty rows. Each thread sums its rows (r = split * ty + row, stepping splits * ty)
// in double; the block adds its ty rows in order into one partial per (split,
// channel); a second kernel adds the splits in order. Consecutive threads read
// consecutive channels, then consecutive rows: one contiguous stretch per warp.

enum class SumKind { stats, moments, backward, relu_backward };

constexpr int kSumThreads = 256;
constexpr int kMaxSplits = 1024;  // 256 threads each: enough to fill an H100 on the 64-channel layers
constexpr int kRowsPerThread = 32;  // rows each thread sums, about, before splits are capped

struct SumLayout {
  int tx, ty, chunks, splits;
};

// `vec`: the channels a thread sums (8 only where the kernel takes 8-wide packs). The
// layout of the flat kernels and of the tiled apply kernels; the tiled sums' too up to
// 32 lanes (channel_sum_layout).
SumLayout sum_layout(std::size_t rows, int c, int vec) {
  const int lanes = c / vec;
  SumLayout l;
  l.tx = lanes < kSumThreads ? lanes : kSumThreads;
  l.ty = kSumThreads / l.tx;
  l.chunks = (lanes + l.tx - 1) / l.tx;
  const std::size_t want = (rows + std::size_t(l.ty) * kRowsPerThread - 1) / (std::size_t(l.ty) * kRowsPerThread);
  l.splits = want < 1 ? 1 : want > std::size_t(kMaxSplits) ? kMaxSplits : int(want);
  return l;
}

// BnKernels::tiled's channel sums over more than 32 lanes (256 channels at eight a
// thread, 32 at one): blocks of 32 lanes by 8 rows, about 8 rows a thread, at most
// kMaxSplits blocks in all while there are at most kMaxSplits chunks. sum_layout puts all
// of a wide layer's lanes across one block row (2048 channels: 256 lanes, one row)
// with about 32 rows a thread: ResNet-50's last stage at batch 64 (4,096 rows) then
// ran 128 blocks of 8 warps, one per multiprocessor of an H200, and wrote partials a
// quarter the size of its input. Here: 512 blocks and half the partials. Up to 32
// lanes sum_layout is kept: more splits there would only lengthen the second pass.
constexpr int kWideLanes = 32;
constexpr int kWideRows = 8;           // rows a block steps through at once (ty)
constexpr int kWideRowsPerThread = 8;  // about, before the splits are capped

SumLayout wide_sum_layout(std::size_t rows, int c, int vec) {
  const int lanes = c / vec;
  SumLayout l;
  l.tx = kWideLanes;
  l.ty = kWideRows;
  l.chunks = (lanes + l.tx - 1) / l.tx;
  const int cap = kMaxSplits / l.chunks > 0 ? kMaxSplits / l.chunks : 1;
  const std::size_t want = (rows + std::size_t(l.ty) * kWideRowsPerThread - 1) / (std::size_t(l.ty) * kWideRowsPerThread);
  l.splits = want < 1 ? 1 : want > std::size_t(cap) ? cap : int(want);
  return l;
}

// The channel sums' layout for `kernels`.
SumLayout channel_sum_layout(std::size_t rows, int c, int vec, BnKernels kernels) {
  if (kernels == BnKernels::tiled && c / vec > kWideLanes) return wide_sum_layout(rows, c, vec);
  return sum_layout(rows, c, vec);
}

struct SumArgs {
  const std::uint16_t* a;  // x (stats, moments) or dy (backward)
  const std::uint16_t* x;  // backward: the batch norm's input
  const float* mean;
  const float* invstd;
  const float* gamma;
  const float* beta;
  std::size_t rows;
  int c;
};

// U rows in flight per thread: their loads are issued before any of their sums (U = 4,
// the tiled kernels), the sums still added row by row in order, so the same bits as U = 1
// (the 2026-11-27 kernel, which ran at about a fifth of an H200's bandwidth).
template <Format16 F, int VEC, SumKind K, int U>
__global__ void channel_partials_kernel(SumArgs args, int tx, int ty, double* partial) {
  using C = Codec<F>;
  constexpr bool kTwoInputs = K == SumKind::backward || K == SumKind::relu_backward;
  __shared__ double shared[kSumThreads * VEC * 2];
  const int lx = threadIdx.x % tx, ly = threadIdx.x / tx;
  const int lane = blockIdx.y * tx + lx;
  const int c0 = lane * VEC;
  const bool active = c0 < args.c;
  double sa[VEC], sb[VEC];
  for (int j = 0; j < VEC; ++j) sa[j] = sb[j] = 0.0;
  if (active) {
    float ref[VEC];  // moments: the shift; backward: the mean
    compute::BatchnormAffine affine[VEC];
    for (int j = 0; j < VEC; ++j) {
      if constexpr (K == SumKind::moments) ref[j] = C::load(args.a[c0 + j]);
      else if constexpr (kTwoInputs) ref[j] = args.mean[c0 + j];
      else ref[j] = 0.f;
      if constexpr (K == SumKind::relu_backward)
        affine[j] = compute::batchnorm_affine_of(args.mean, args.invstd, args.gamma, args.beta, c0 + j);
    }
    const auto add_row = [&](const Pack<VEC>& pa, const Pack<VEC>& px) {
      if constexpr (K == SumKind::stats || K == SumKind::moments) {
        for (int j = 0; j < VEC; ++j) {
          const double v = double(C::load(pa.v[j])) - double(ref[j]);
          sa[j] += v;
          sb[j] += v * v;
        }
      } else {
        for (int j = 0; j < VEC; ++j) {
          const float xv = C::load(px.v[j]);
          float g = C::load(pa.v[j]);
          if constexpr (K == SumKind::relu_backward) g = compute::relu_masked(g, xv, affine[j]);
          sa[j] += double(g);
          sb[j] += double(g) * (double(xv) - double(ref[j]));
        }
      }
    };
    const std::size_t step = std::size_t(gridDim.x) * ty;
    std::size_t r = std::size_t(blockIdx.x) * ty + ly;
    for (; r + (U - 1) * step < args.rows; r += U * step) {
      Pack<VEC> pa[U], px[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const std::size_t off = (r + u * step) * args.c + c0;
        pa[u] = load_pack<VEC>(args.a + off);
        if constexpr (kTwoInputs) px[u] = load_pack<VEC>(args.x + off);
        else px[u] = Pack<VEC>{};
      }
#pragma unroll
      for (int u = 0; u < U; ++u) add_row(pa[u], px[u]);
    }
    for (; r < args.rows; r += step) {
      const std::size_t off = r * args.c + c0;
      add_row(load_pack<VEC>(args.a + off), kTwoInputs ? load_pack<VEC>(args.x + off) : Pack<VEC>{});
    }
  }
  // Thread-major within each (channel j, sum) plane: neighbouring threads hit
  // neighbouring words. Until 2026-11-28 each thread's 2 * VEC doubles lay together,
  // so with VEC = 8 (128 bytes apart) a warp's stores and the lane sums' reads went to
  // one bank (32-way conflicts, a fixed cost per block). The same additions in the
  // same order.
  const auto at = [](int j, int sum, int t) { return (j * 2 + sum) * kSumThreads + t; };
  for (int j = 0; j < VEC; ++j) {
    shared[at(j, 0, threadIdx.x)] = sa[j];
    shared[at(j, 1, threadIdx.x)] = sb[j];
  }
  __syncthreads();
  if (ly != 0 || !active) return;
  for (int j = 0; j < VEC; ++j) {
    double a = 0.0, b = 0.0;
    for (int row = 0; row < ty; ++row) {
      const int t = row * tx + lx;
      a += shared[at(j, 0, t)];
      b += shared[at(j, 1, t)];
    }
    partial[(std::size_t(blockIdx.x) * args.c + c0 + j) * 2 + 0] = a;
    partial[(std::size_t(blockIdx.x) * args.c + c0 + j) * 2 + 1] = b;
  }
}

// mean = shift + a / count, M2 = b - a^2 / count (kernels/batchnorm.cu's rule).
template <Format16 F>
__device__ inline void store_channel_moments(const std::uint16_t* x, int c, int ch, double count, double a, double b,
                                             float* out) {
  if (count <= 0.0) {
    compute::store_moments(out, c, ch, 0.0, 0.0);
    return;
  }
  const double m2 = b - a * a / count;
  compute::store_moments(out, c, ch, double(Codec<F>::load(x[ch])) + a / count, m2 > 0.0 ? m2 : 0.0);
}

// BnKernels::flat: one thread per channel adds its splits. With `finalize` (its mean
// set), each channel's statistics from its moments alone (channel_partials.cuh).
template <Format16 F>
__global__ void moments_kernel(const std::uint16_t* x, const double* partial, int c, int splits, double count,
                               float* out, BnFinalize finalize) {
  const int ch = blockIdx.x * blockDim.x + threadIdx.x;
  if (ch == 0) out[3 * c] = static_cast<float>(count);
  if (ch >= c) return;
  double a = 0.0, b = 0.0;
  for (int s = 0; s < splits; ++s) {
    a += partial[(std::size_t(s) * c + ch) * 2 + 0];
    b += partial[(std::size_t(s) * c + ch) * 2 + 1];
  }
  store_channel_moments<F>(x, c, ch, count, a, b, out);
  if (finalize.mean) finalize_stored_channel(out, c, ch, count, finalize);
}

// BnKernels::tiled: the splits over kSplitLanes threads per channel (channel_partials.cuh).
template <Format16 F>
__global__ void __launch_bounds__(32 * kSplitLanes)
    moments_lanes_kernel(const std::uint16_t* x, const double* partial, int c, int splits, double count, float* out,
                         BnFinalize finalize) {
  if (blockIdx.x == 0 && threadIdx.x == 0 && threadIdx.y == 0) out[3 * c] = static_cast<float>(count);
  int ch;
  double a, b;
  if (!sum_split_lanes(partial, c, splits, ch, a, b)) return;
  store_channel_moments<F>(x, c, ch, count, a, b, out);
  if (finalize.mean) finalize_stored_channel(out, c, ch, count, finalize);
}

// Launches the partial sums and returns how many splits each channel has. The layout
// follows the packs the kernel takes: a view not 16-byte aligned takes one channel a
// thread whatever c is, and needs that layout's lanes and splits.
template <SumKind K>
int channel_partials(const SumArgs& args, Format16 f, BnKernels kernels, double* scratch, cudaStream_t s) {
  const bool eight = packs_of_8(args.c % 8 == 0, {args.a, args.x});
  const SumLayout l = channel_sum_layout(args.rows, args.c, eight ? 8 : 1, kernels);
  dispatch(f, eight, [&](auto v) {
    using V = decltype(v);
    const dim3 grid(unsigned(l.splits), unsigned(l.chunks));
    if (tiled_kernels(kernels))
      channel_partials_kernel<V::F, V::VEC, K, 4><<<grid, l.tx * l.ty, 0, s>>>(args, l.tx, l.ty, scratch);
    else
      channel_partials_kernel<V::F, V::VEC, K, 1><<<grid, l.tx * l.ty, 0, s>>>(args, l.tx, l.ty, scratch);
  });
  return l.splits;
}

template <SumKind K>
void channel_sums(const SumArgs& args, Format16 f, BnKernels kernels, const BnParamGrads& grads, float* out,
                  double* scratch, cudaStream_t s) {
  if (args.c <= 0) return;
  if (args.rows == 0) {
    // No values: zero sums, and the zero gradients they give. Rare (an empty
    // batch), so the memsets and the parameter-gradient kernel stay separate.
    cudaMemsetAsync(out, 0, 2 * std::size_t(args.c) * sizeof(float), s);
    if (grads.any()) batchnorm_param_grads(out, grads.invstd, args.c, grads.dgamma, grads.dbeta, s);
    return;
  }
  const int splits = channel_partials<K>(args, f, kernels, scratch, s);
  if (tiled_kernels(kernels))
    channel_partials_sum_lanes_kernel<<<split_lanes_grid(args.c), split_lanes_block(), 0, s>>>(scratch, args.c,
                                                                                              splits, out, grads);
  else
    channel_partials_sum_kernel<<<(args.c + kThreads - 1) / kThreads, kThreads, 0, s>>>(scratch, args.c, splits, out,
                                                                                         grads);
}

// ---- element-wise batch norm -------------------------------------------------------
// Per-channel coefficients first (c threads), so the element pass reads two to six
// floats per channel instead of recomputing them per element.

struct ApplyCoefficients {  // in `coefficients`: [scale | shift | mean_dy | proj | mean | k], c floats each
  float* base;  // null: the tiled kernels compute their channels' coefficients from `in` (folded)
  int c;
  __device__ float& at(int field, int ch) const { return base[std::size_t(field) * c + ch]; }
};

// What apply_coefficients_kernel computes the coefficients from; reduce is null in
// the forward.
struct CoefficientInputs {
  const float* mean;
  const float* invstd;
  const float* gamma;
  const float* beta;
  const float* reduce;
  double count;
};

__global__ void apply_coefficients_kernel(CoefficientInputs in, ApplyCoefficients k) {
  const int ch = blockIdx.x * blockDim.x + threadIdx.x;
  if (ch >= k.c) return;
  if (in.reduce == nullptr) {
    const compute::BatchnormAffine a = compute::batchnorm_affine_of(in.mean, in.invstd, in.gamma, in.beta, ch);
    k.at(0, ch) = a.scale;
    k.at(1, ch) = a.shift;
    return;
  }
  // The fp32 backward kernels' rule (batchnorm_backward_rule.cuh), so the same roundings.
  const auto r = BackwardApplyRule<true>::of(in.mean, in.invstd, in.gamma, in.beta, in.reduce, in.count, k.c, ch);
  k.at(0, ch) = r.affine.scale;
  k.at(1, ch) = r.affine.shift;
  k.at(2, ch) = r.mean_dy;
  k.at(3, ch) = r.proj;
  k.at(4, ch) = r.mu;
  k.at(5, ch) = r.k;
}

template <Format16 F, int VEC>
__global__ void apply_kernel(const std::uint16_t* x, const std::uint16_t* residual, bool relu, std::uint16_t* y,
                             std::size_t groups, ApplyCoefficients k) {
  using C = Codec<F>;
  for (std::size_t g = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; g < groups;
       g += std::size_t(blockDim.x) * gridDim.x) {
    const std::size_t off = g * VEC;
    const int c0 = int(off % k.c);
    const Pack<VEC> px = load_pack<VEC>(x + off);
    Pack<VEC> pr{};
    if (residual) pr = load_pack<VEC>(residual + off);
    Pack<VEC> out;
    for (int j = 0; j < VEC; ++j) {
      const compute::BatchnormAffine a{k.at(0, c0 + j), k.at(1, c0 + j)};
      const float xv = C::load(px.v[j]);
      float v;
      if (!relu) v = compute::batchnorm_affine(xv, a);
      else if (residual) v = compute::batchnorm_add_relu(xv, a, C::load(pr.v[j]));
      else v = compute::batchnorm_relu(xv, a);
      out.v[j] = C::store(v);
    }
    store_pack<VEC>(y + off, out);
  }
}

template <Format16 F, int VEC>
__global__ void backward_apply_kernel(const std::uint16_t* dy, const std::uint16_t* x, bool relu, std::uint16_t* dx,
                                      std::size_t groups, ApplyCoefficients k) {
  using C = Codec<F>;
  for (std::size_t g = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; g < groups;
       g += std::size_t(blockDim.x) * gridDim.x) {
    const std::size_t off = g * VEC;
    const int c0 = int(off % k.c);
    const Pack<VEC> pd = load_pack<VEC>(dy + off);
    const Pack<VEC> px = load_pack<VEC>(x + off);
    Pack<VEC> out;
    for (int j = 0; j < VEC; ++j) {
      const int ch = c0 + j;
      const float xv = C::load(px.v[j]);
      float gradient = C::load(pd.v[j]);
      if (relu) gradient = compute::relu_masked(gradient, xv, compute::BatchnormAffine{k.at(0, ch), k.at(1, ch)});
      out.v[j] = C::store((gradient - k.at(2, ch) - (xv - k.at(4, ch)) * k.at(3, ch)) * k.at(5, ch));
    }
    store_pack<VEC>(dx + off, out);
  }
}

// The tiled kernels: sum_layout's lanes and rows (tx channel lanes of VEC channels by
// ty rows, one chunk of lanes per blockIdx.y; the channel sums' layout up to 32
// lanes), so each thread reads its channels' coefficients once into registers, needs
// no division to find its channel, and goes down its rows with U rows' loads in
// flight. The flat kernels above (one pack per thread, a 64-bit remainder and 2 to 6
// coefficient loads per value) ran at about 40% of an H200's bandwidth (2026-11-27).
// The arithmetic per value is theirs.
constexpr int kTileRowsPerThread = 8;  // rows per thread, about, before the grid is capped
constexpr int kTileRowsInFlight = 4;

struct TileLayout {
  int tx, ty;
  dim3 grid;
};

TileLayout tile_layout(std::size_t rows, int c, int vec) {
  const SumLayout sums = sum_layout(rows, c, vec);  // its lanes and chunks; rows split otherwise
  const std::size_t per_block = std::size_t(sums.ty) * kTileRowsPerThread;
  std::size_t blocks = (rows + per_block - 1) / per_block;
  blocks = blocks < 1 ? 1 : blocks > (std::size_t(1) << 20) ? (std::size_t(1) << 20) : blocks;
  return {sums.tx, sums.ty, dim3(unsigned(blocks), unsigned(sums.chunks))};
}

// For the thread's rows r = first, first + step, ... below `rows`, kTileRowsInFlight at
// a time: load(offset, u) for all of them first, then use(offset, u).
template <typename Load, typename Use>
__device__ inline void tile_rows(std::size_t rows, int c, int c0, int tx, int ty, Load&& load, Use&& use) {
  constexpr int U = kTileRowsInFlight;
  const std::size_t step = std::size_t(gridDim.x) * ty;
  std::size_t r = std::size_t(blockIdx.x) * ty + int(threadIdx.x) / tx;
  for (; r + (U - 1) * step < rows; r += U * step) {
#pragma unroll
    for (int u = 0; u < U; ++u) load((r + u * step) * c + c0, u);
#pragma unroll
    for (int u = 0; u < U; ++u) use((r + u * step) * c + c0, u);
  }
  for (; r < rows; r += step) {
    load(r * c + c0, 0);
    use(r * c + c0, 0);
  }
}

template <Format16 F, int VEC>
__global__ void apply_tiled_kernel(const std::uint16_t* x, const std::uint16_t* residual, bool relu, std::uint16_t* y,
                                   std::size_t rows, int tx, int ty, ApplyCoefficients k, CoefficientInputs in) {
  using C = Codec<F>;
  const int c0 = (int(blockIdx.y) * tx + int(threadIdx.x) % tx) * VEC;
  if (c0 >= k.c) return;
  compute::BatchnormAffine a[VEC];
  for (int j = 0; j < VEC; ++j)
    a[j] = k.base ? compute::BatchnormAffine{k.at(0, c0 + j), k.at(1, c0 + j)}
                  : compute::batchnorm_affine_of(in.mean, in.invstd, in.gamma, in.beta, c0 + j);
  Pack<VEC> px[kTileRowsInFlight], pr[kTileRowsInFlight];
  tile_rows(
      rows, k.c, c0, tx, ty,
      [&](std::size_t off, int u) {
        px[u] = load_pack<VEC>(x + off);
        pr[u] = residual ? load_pack<VEC>(residual + off) : Pack<VEC>{};
      },
      [&](std::size_t off, int u) {
        Pack<VEC> out;
        for (int j = 0; j < VEC; ++j) {
          const float xv = C::load(px[u].v[j]);
          float v;
          if (!relu) v = compute::batchnorm_affine(xv, a[j]);
          else if (residual) v = compute::batchnorm_add_relu(xv, a[j], C::load(pr[u].v[j]));
          else v = compute::batchnorm_relu(xv, a[j]);
          out.v[j] = C::store(v);
        }
        store_pack<VEC>(y + off, out);
      });
}

template <Format16 F, int VEC>
__global__ void backward_apply_tiled_kernel(const std::uint16_t* dy, const std::uint16_t* x, bool relu,
                                            std::uint16_t* dx, std::size_t rows, int tx, int ty,
                                            ApplyCoefficients k, CoefficientInputs in) {
  using C = Codec<F>;
  const int c0 = (int(blockIdx.y) * tx + int(threadIdx.x) % tx) * VEC;
  if (c0 >= k.c) return;
  compute::BatchnormAffine a[VEC];
  float mean_dy[VEC], proj[VEC], mean[VEC], scale[VEC];
  for (int j = 0; j < VEC; ++j) {
    const int ch = c0 + j;
    if (k.base) {
      a[j] = relu ? compute::BatchnormAffine{k.at(0, ch), k.at(1, ch)} : compute::BatchnormAffine{0.f, 0.f};
      mean_dy[j] = k.at(2, ch);
      proj[j] = k.at(3, ch);
      mean[j] = k.at(4, ch);
      scale[j] = k.at(5, ch);
      continue;
    }
    const auto r = BackwardApplyRule<true>::of(in.mean, in.invstd, in.gamma, in.beta, in.reduce, in.count, k.c, ch);
    a[j] = relu ? r.affine : compute::BatchnormAffine{0.f, 0.f};
    mean_dy[j] = r.mean_dy;
    proj[j] = r.proj;
    mean[j] = r.mu;
    scale[j] = r.k;
  }
  Pack<VEC> pd[kTileRowsInFlight], px[kTileRowsInFlight];
  tile_rows(
      rows, k.c, c0, tx, ty,
      [&](std::size_t off, int u) {
        pd[u] = load_pack<VEC>(dy + off);
        px[u] = load_pack<VEC>(x + off);
      },
      [&](std::size_t off, int u) {
        Pack<VEC> out;
        for (int j = 0; j < VEC; ++j) {
          const float xv = C::load(px[u].v[j]);
          float gradient = C::load(pd[u].v[j]);
          if (relu) gradient = compute::relu_masked(gradient, xv, a[j]);
          out.v[j] = C::store((gradient - mean_dy[j] - (xv - mean[j]) * proj[j]) * scale[j]);
        }
        store_pack<VEC>(dx + off, out);
      });
}

// ---- max pooling (pool.cuh's semantics, NHWC) -------------------------------------

// The window's argmax as y * w + x within image `image` (its first element), channel `ch`.
template <Format16 F>
__device__ inline int image_argmax(const std::uint16_t* image, const PoolShape& p, int oy, int ox, int ch) {
  return detail::window_argmax(
      p, oy, ox, [&](int y, int x) { return Codec<F>::load(image[(std::size_t(y) * p.w + x) * p.c + ch]); });
}

// One thread per output element (n, oy, ox, ch); with `argmax` set, the window's
// argmax is written there instead of the maximum into y. Index: unsigned where every
// index and the grid stride stay below 2^32 (pool_index_fits), else std::size_t: a
// 64-bit division per index costs several times a 32-bit one, and these kernels do
// three per element (the one-pass backward lost 2.75 ms of a bf16 ResNet-50 step to
// such arithmetic and recomputation on an H200).
template <Format16 F, typename Index>
__global__ void pool_forward_kernel(const std::uint16_t* x, std::uint16_t* y, int* argmax, PoolShape p,
                                    Index total) {
  for (Index i = blockIdx.x * Index(blockDim.x) + threadIdx.x; i < total; i += Index(blockDim.x) * gridDim.x) {
    const int ch = int(i % Index(p.c));
    const Index pixel = i / Index(p.c);
    const int ox = int(pixel % Index(p.ow));
    const int oy = int((pixel / Index(p.ow)) % Index(p.oh));
    const Index n = pixel / (Index(p.ow) * Index(p.oh));
    const std::uint16_t* image = x + std::size_t(n) * p.h * p.w * p.c;
    const int a = image_argmax<F>(image, p, oy, ox, ch);
    if (argmax) argmax[i] = a;
    else y[i] = a >= 0 ? image[std::size_t(a) * p.c + ch] : Codec<F>::store(-INFINITY);
  }
}

// Each input element sums dy over the outputs whose argmax it is, in the CPU
// twin's order (output rows, then columns).
template <Format16 F, typename Index>
__global__ void pool_gather_kernel(const int* argmax, const std::uint16_t* dy, std::uint16_t* dx, PoolShape p,
                                   Index total) {
  for (Index i = blockIdx.x * Index(blockDim.x) + threadIdx.x; i < total; i += Index(blockDim.x) * gridDim.x) {
    const int ch = int(i % Index(p.c));
    const Index pixel = i / Index(p.c);
    const int ix = int(pixel % Index(p.w));
    const int iy = int((pixel / Index(p.w)) % Index(p.h));
    const Index n = pixel / (Index(p.w) * Index(p.h));
    const int self = iy * p.w + ix;
    const detail::CoveringOutputs c = detail::covering_outputs(p, iy, ix);
    float g = 0.f;
    for (int oy = c.oy_lo; oy <= c.oy_hi; ++oy)
      for (int ox = c.ox_lo; ox <= c.ox_hi; ++ox) {
        const Index o = ((n * Index(p.oh) + Index(oy)) * Index(p.ow) + Index(ox)) * Index(p.c) + Index(ch);
        if (argmax[o] == self) g += Codec<F>::load(dy[o]);
      }
    dx[i] = Codec<F>::store(g);
  }
}

// The same two kernels for channels in groups of 8 (16-byte loads of x and dy, two
// 16-byte accesses of the argmaxes): one index computation per 8 values, the
// per-element kernels' cost on an H200 (2026-11-27: 1.3 ms of a bf16 ResNet-50 step
// for the stem's pooling, against under 0.1 ms of memory traffic). Per channel the
// same window walk, tie and NaN rules and summation order, so the same bits.
// Where group i of `per_pixel` channel groups lies in an NHWC tensor w pixels wide, h high.
template <typename Index>
struct GroupAt {
  int group, x, y;
  Index n;
};
template <typename Index>
__device__ inline GroupAt<Index> group_at(Index i, int per_pixel, int w, int h) {
  const Index pixel = i / Index(per_pixel);
  return {int(i % Index(per_pixel)), int(pixel % Index(w)), int((pixel / Index(w)) % Index(h)),
          pixel / (Index(w) * Index(h))};
}

template <Format16 F, typename Index>
__global__ void pool_forward_vec_kernel(const std::uint16_t* x, std::uint16_t* y, int* argmax, PoolShape p,
                                        Index groups) {
  using C = Codec<F>;
  const int cg = p.c / 8;
  for (Index i = blockIdx.x * Index(blockDim.x) + threadIdx.x; i < groups; i += Index(blockDim.x) * gridDim.x) {
    const GroupAt<Index> at = group_at(i, cg, p.ow, p.oh);
    const int ox = at.x, oy = at.y;
    const std::uint16_t* image = x + std::size_t(at.n) * p.h * p.w * p.c + std::size_t(at.group) * 8;
    int best[8];
    float best_v[8];
    std::uint16_t best_bits[8];
    bool nan_found[8];
    for (int j = 0; j < 8; ++j) {
      best[j] = -1;
      best_v[j] = -INFINITY;
      best_bits[j] = 0;
      nan_found[j] = false;
    }
    const int y0 = oy * p.stride - p.pad, x0 = ox * p.stride - p.pad;
    for (int ky = 0; ky < p.kernel; ++ky) {
      const int yy = y0 + ky;
      if (yy < 0 || yy >= p.h) continue;
      for (int kx = 0; kx < p.kernel; ++kx) {
        const int xx = x0 + kx;
        if (xx < 0 || xx >= p.w) continue;
        const int pos = yy * p.w + xx;
        const Pack<8> v = load_pack<8>(image + std::size_t(pos) * p.c);
        for (int j = 0; j < 8; ++j) {  // detail::window_argmax's rule, per channel
          if (nan_found[j]) continue;
          const float f = C::load(v.v[j]);
          if (best[j] < 0 || f > best_v[j] || isnan(f)) {
            best[j] = pos;
            best_v[j] = f;
            best_bits[j] = v.v[j];
            nan_found[j] = isnan(f);
          }
        }
      }
    }
    const std::size_t o = std::size_t(i) * 8;
    if (argmax) {
      reinterpret_cast<int4*>(argmax + o)[0] = make_int4(best[0], best[1], best[2], best[3]);
      reinterpret_cast<int4*>(argmax + o)[1] = make_int4(best[4], best[5], best[6], best[7]);
    } else {
      Pack<8> out;
      for (int j = 0; j < 8; ++j) out.v[j] = best[j] >= 0 ? best_bits[j] : C::store(-INFINITY);
      store_pack<8>(y + o, out);
    }
  }
}

template <Format16 F, typename Index>
__global__ void pool_gather_vec_kernel(const int* argmax, const std::uint16_t* dy, std::uint16_t* dx, PoolShape p,
                                       Index groups) {
  using C = Codec<F>;
  const int cg = p.c / 8;
  for (Index i = blockIdx.x * Index(blockDim.x) + threadIdx.x; i < groups; i += Index(blockDim.x) * gridDim.x) {
    const GroupAt<Index> at = group_at(i, cg, p.w, p.h);
    const int self = at.y * p.w + at.x;
    const detail::CoveringOutputs c = detail::covering_outputs(p, at.y, at.x);
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    for (int oy = c.oy_lo; oy <= c.oy_hi; ++oy)
      for (int ox = c.ox_lo; ox <= c.ox_hi; ++ox) {
        const std::size_t o = ((std::size_t(at.n) * p.oh + oy) * p.ow + ox) * p.c + std::size_t(at.group) * 8;
        const int4* packed = reinterpret_cast<const int4*>(argmax + o);
        const int4 a0 = packed[0], a1 = packed[1];
        const int am[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
        const Pack<8> d = load_pack<8>(dy + o);
        for (int j = 0; j < 8; ++j)
          if (am[j] == self) acc[j] += C::load(d.v[j]);
      }
    Pack<8> out;
    for (int j = 0; j < 8; ++j) out.v[j] = C::store(acc[j]);
    store_pack<8>(dx + std::size_t(i) * 8, out);
  }
}

// ---- element-wise -------------------------------------------------------------------

template <Format16 F, int VEC>
__global__ void relu_backward_kernel(const std::uint16_t* y, const std::uint16_t* dy, std::uint16_t* dx,
                                     std::size_t groups) {
  for (std::size_t g = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; g < groups;
       g += std::size_t(blockDim.x) * gridDim.x) {
    const Pack<VEC> py = load_pack<VEC>(y + g * VEC);
    Pack<VEC> pd = load_pack<VEC>(dy + g * VEC);
    for (int j = 0; j < VEC; ++j)
      if (!(Codec<F>::load(py.v[j]) > 0.f)) pd.v[j] = 0;  // +0 in both 16-bit formats
    store_pack<VEC>(dx + g * VEC, pd);
  }
}

template <Format16 F, int VEC>
__global__ void accumulate_kernel(const std::uint16_t* x, std::uint16_t* out, std::size_t groups) {
  using C = Codec<F>;
  for (std::size_t g = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; g < groups;
       g += std::size_t(blockDim.x) * gridDim.x) {
    const Pack<VEC> px = load_pack<VEC>(x + g * VEC);
    Pack<VEC> po = load_pack<VEC>(out + g * VEC);
    for (int j = 0; j < VEC; ++j) po.v[j] = C::store(C::load(po.v[j]) + C::load(px.v[j]));
    store_pack<VEC>(out + g * VEC, po);
  }
}

}  // namespace

std::size_t nhwc16_scratch_doubles(std::size_t rows, int c) {
  if (c <= 0) c = 1;
  // Any layout of any kernels: one channel a thread (views not aligned) or eight.
  int splits = 0;
  for (int vec : {1, 8})
    if (vec == 1 || c % 8 == 0)
      for (BnKernels k : {BnKernels::tiled, BnKernels::flat})
        splits = std::max(splits, channel_sum_layout(rows, c, vec, k).splits);
  return std::size_t(splits) * std::size_t(c) * 2;
}

std::size_t nhwc16_coefficient_floats(int c) { return 6 * std::size_t(c > 0 ? c : 0); }

void nhwc16_stats(const std::uint16_t* x, std::size_t rows, int c, Format16 f, BnKernels kernels, float* out,
                  double* scratch, cudaStream_t s) {
  channel_sums<SumKind::stats>(SumArgs{x, nullptr, nullptr, nullptr, nullptr, nullptr, rows, c}, f, kernels,
                               BnParamGrads{}, out, scratch, s);
}

void nhwc16_moments(const std::uint16_t* x, std::size_t rows, int c, Format16 f, BnKernels kernels, float* out,
                    double* scratch, cudaStream_t s) {
  nhwc16_local_statistics(x, rows, c, f, kernels, BnFinalize{}, out, scratch, s);
}

void nhwc16_local_statistics(const std::uint16_t* x, std::size_t rows, int c, Format16 f, BnKernels kernels,
                             const BnFinalize& finalize, float* out, double* scratch, cudaStream_t s) {
  if (c <= 0) return;
  const SumArgs args{x, nullptr, nullptr, nullptr, nullptr, nullptr, rows, c};
  const int splits = rows > 0 ? channel_partials<SumKind::moments>(args, f, kernels, scratch, s) : 0;
  if (tiled_kernels(kernels)) {
    if (f == Format16::bf16)
      moments_lanes_kernel<Format16::bf16>
          <<<split_lanes_grid(c), split_lanes_block(), 0, s>>>(x, scratch, c, splits, double(rows), out, finalize);
    else
      moments_lanes_kernel<Format16::fp16>
          <<<split_lanes_grid(c), split_lanes_block(), 0, s>>>(x, scratch, c, splits, double(rows), out, finalize);
    return;
  }
  const unsigned blocks = unsigned((c + kThreads) / kThreads);  // c + 1 threads: the count too
  if (f == Format16::bf16)
    moments_kernel<Format16::bf16><<<blocks, kThreads, 0, s>>>(x, scratch, c, splits, double(rows), out, finalize);
  else
    moments_kernel<Format16::fp16><<<blocks, kThreads, 0, s>>>(x, scratch, c, splits, double(rows), out, finalize);
}

namespace {
// The coefficients' own kernel, unless the tiled element pass computes them (`fold`):
// returns where the pass reads them (base null: computed in the pass).
ApplyCoefficients coefficients_for(const CoefficientInputs& in, int c, BnKernels kernels, bool fold,
                                   float* coefficients, cudaStream_t s) {
  if (fold && tiled_kernels(kernels)) return ApplyCoefficients{nullptr, c};
  const ApplyCoefficients k{coefficients, c};
  apply_coefficients_kernel<<<(c + kThreads - 1) / kThreads, kThreads, 0, s>>>(in, k);
  return k;
}
}  // namespace

void nhwc16_batchnorm_apply(const std::uint16_t* x, const float* mean, const float* invstd, const float* gamma,
                            const float* beta, const std::uint16_t* residual, bool relu, std::uint16_t* y,
                            std::size_t rows, int c, Format16 f, BnKernels kernels, bool fold, float* coefficients,
                            cudaStream_t s) {
  const std::size_t total = rows * std::size_t(c > 0 ? c : 0);
  if (!total) return;
  const CoefficientInputs in{mean, invstd, gamma, beta, nullptr, 1.0};
  const ApplyCoefficients k = coefficients_for(in, c, kernels, fold, coefficients, s);
  dispatch(f, packs_of_8(c % 8 == 0, {x, residual, y}), [&](auto v) {
    using V = decltype(v);
    if (tiled_kernels(kernels)) {
      const TileLayout l = tile_layout(rows, c, V::VEC);
      apply_tiled_kernel<V::F, V::VEC><<<l.grid, l.tx * l.ty, 0, s>>>(x, residual, relu, y, rows, l.tx, l.ty, k, in);
      return;
    }
    const std::size_t groups = total / V::VEC;
    apply_kernel<V::F, V::VEC><<<blocks_for(groups), kThreads, 0, s>>>(x, residual, relu, y, groups, k);
  });
}

void nhwc16_batchnorm_backward_reduce(const std::uint16_t* dy, const std::uint16_t* x, const float* mean,
                                      const float* invstd, const float* gamma, const float* beta, bool relu,
                                      std::size_t rows, int c, Format16 f, BnKernels kernels,
                                      const BnParamGrads& grads, float* out, double* scratch, cudaStream_t s) {
  const SumArgs args{dy, x, mean, invstd, gamma, beta, rows, c};
  if (relu) channel_sums<SumKind::relu_backward>(args, f, kernels, grads, out, scratch, s);
  else channel_sums<SumKind::backward>(args, f, kernels, grads, out, scratch, s);
}

void nhwc16_batchnorm_backward_apply(const std::uint16_t* dy, const std::uint16_t* x, const float* mean,
                                     const float* invstd, const float* gamma, const float* beta, const float* reduce,
                                     double count, bool relu, std::uint16_t* dx, std::size_t rows, int c, Format16 f,
                                     BnKernels kernels, bool fold, float* coefficients, cudaStream_t s) {
  const std::size_t total = rows * std::size_t(c > 0 ? c : 0);
  if (!total) return;
  const CoefficientInputs in{mean, invstd, gamma, beta, reduce, count};
  const ApplyCoefficients k = coefficients_for(in, c, kernels, fold, coefficients, s);
  dispatch(f, packs_of_8(c % 8 == 0, {dy, x, dx}), [&](auto v) {
    using V = decltype(v);
    if (tiled_kernels(kernels)) {
      const TileLayout l = tile_layout(rows, c, V::VEC);
      backward_apply_tiled_kernel<V::F, V::VEC>
          <<<l.grid, l.tx * l.ty, 0, s>>>(dy, x, relu, dx, rows, l.tx, l.ty, k, in);
      return;
    }
    const std::size_t groups = total / V::VEC;
    backward_apply_kernel<V::F, V::VEC><<<blocks_for(groups), kThreads, 0, s>>>(dy, x, relu, dx, groups, k);
  });
}

namespace {

// 32-bit indices for a pooling whose inputs and outputs both number under 2^31: the
// grid stride (at most blocks_for's cap times kThreads, under 2^31 too) then cannot
// carry an index past 2^32.
bool pool_index_fits(const PoolShape& p) {
  const std::size_t limit = std::size_t(1) << 31;
  return std::size_t(p.n) * p.h * p.w * p.c < limit && std::size_t(p.n) * p.oh * p.ow * p.c < limit;
}

template <Format16 F, typename Index>
void maxpool_forward(const std::uint16_t* x, std::uint16_t* y, const PoolShape& p, cudaStream_t s) {
  const std::size_t total = std::size_t(p.n) * p.oh * p.ow * p.c;
  if (!total) return;
  if (packs_of_8(p.c % 8 == 0, {x, y})) {
    const std::size_t groups = total / 8;
    pool_forward_vec_kernel<F, Index><<<blocks_for(groups), kThreads, 0, s>>>(x, y, nullptr, p, Index(groups));
    return;
  }
  pool_forward_kernel<F, Index><<<blocks_for(total), kThreads, 0, s>>>(x, y, nullptr, p, Index(total));
}

template <Format16 F, typename Index>
void maxpool_backward(const std::uint16_t* x, const std::uint16_t* dy, std::uint16_t* dx, int* argmax,
                      const PoolShape& p, cudaStream_t s) {
  const std::size_t outputs = std::size_t(p.n) * p.oh * p.ow * p.c;
  const std::size_t inputs = std::size_t(p.n) * p.h * p.w * p.c;
  if (!inputs) return;
  if (packs_of_8(p.c % 8 == 0, {x, dy, dx, argmax})) {
    if (outputs)
      pool_forward_vec_kernel<F, Index>
          <<<blocks_for(outputs / 8), kThreads, 0, s>>>(x, nullptr, argmax, p, Index(outputs / 8));
    pool_gather_vec_kernel<F, Index>
        <<<blocks_for(inputs / 8), kThreads, 0, s>>>(argmax, dy, dx, p, Index(inputs / 8));
    return;
  }
  if (outputs)
    pool_forward_kernel<F, Index><<<blocks_for(outputs), kThreads, 0, s>>>(x, nullptr, argmax, p, Index(outputs));
  pool_gather_kernel<F, Index><<<blocks_for(inputs), kThreads, 0, s>>>(argmax, dy, dx, p, Index(inputs));
}

}  // namespace

void nhwc16_maxpool_forward(const std::uint16_t* x, std::uint16_t* y, const PoolShape& p, Format16 f,
                            cudaStream_t s) {
  const bool narrow = pool_index_fits(p);
  if (f == Format16::bf16) {
    if (narrow) maxpool_forward<Format16::bf16, unsigned>(x, y, p, s);
    else maxpool_forward<Format16::bf16, std::size_t>(x, y, p, s);
  } else {
    if (narrow) maxpool_forward<Format16::fp16, unsigned>(x, y, p, s);
    else maxpool_forward<Format16::fp16, std::size_t>(x, y, p, s);
  }
}

void nhwc16_maxpool_backward(const std::uint16_t* x, const std::uint16_t* dy, std::uint16_t* dx, int* argmax,
                             const PoolShape& p, Format16 f, cudaStream_t s) {
  const bool narrow = pool_index_fits(p);
  if (f == Format16::bf16) {
    if (narrow) maxpool_backward<Format16::bf16, unsigned>(x, dy, dx, argmax, p, s);
    else maxpool_backward<Format16::bf16, std::size_t>(x, dy, dx, argmax, p, s);
  } else {
    if (narrow) maxpool_backward<Format16::fp16, unsigned>(x, dy, dx, argmax, p, s);
    else maxpool_backward<Format16::fp16, std::size_t>(x, dy, dx, argmax, p, s);
  }
}

void nhwc16_relu_backward(const std::uint16_t* y, const std::uint16_t* dy, std::uint16_t* dx, std::size_t count,
                          Format16 f, cudaStream_t s) {
  if (!count) return;
  dispatch(f, packs_of_8(count % 8 == 0, {y, dy, dx}), [&](auto v) {
    using V = decltype(v);
    const std::size_t groups = count / V::VEC;
    relu_backward_kernel<V::F, V::VEC><<<blocks_for(groups), kThreads, 0, s>>>(y, dy, dx, groups);
  });
}

void nhwc16_accumulate(const std::uint16_t* x, std::uint16_t* out, std::size_t count, Format16 f, cudaStream_t s) {
  if (!count) return;
  dispatch(f, packs_of_8(count % 8 == 0, {x, out}), [&](auto v) {
    using V = decltype(v);
    const std::size_t groups = count / V::VEC;
    accumulate_kernel<V::F, V::VEC><<<blocks_for(groups), kThreads, 0, s>>>(x, out, groups);
  });
}

}  // namespace trainer::kernels
