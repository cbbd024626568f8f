// Mixed-precision kernels; see cast.cuh.
#include "cast.cuh"

#include "compute/filter_layout.hpp"  // krsc_source_index, krsc_index_of
#include "compute/float16.hpp"  // f16::float_to_bf16, float_to_half, bf16_to_float, half_to_float
#include "launch.cuh"           // blocks_for, kThreads

namespace trainer::kernels {
namespace {

using detail::blocks_for;
using detail::kThreads;

// Same-layout casts: both sides coalesced.
template <bool kHalf>
__global__ void to16_kernel(const float* src, std::uint16_t* dst, std::size_t total) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(blockDim.x) * gridDim.x)
    dst[i] = kHalf ? compute::f16::float_to_half(src[i]) : compute::f16::float_to_bf16(src[i]);
}

template <bool kHalf>
__global__ void from16_kernel(const std::uint16_t* src, float* dst, std::size_t total) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(blockDim.x) * gridDim.x)
    dst[i] = kHalf ? compute::f16::half_to_float(src[i]) : compute::f16::bf16_to_float(src[i]);
}

// NCHW <-> NHWC casts are per-sample transposes of a [C, HW] matrix. A per-element
// gather (each thread dividing its index back into n, c, h, w, one side strided)
// took 55% of a bf16 ResNet-50 step on an H200 (2026-11-26), far more than the
// convolutions it fed. Tiles through shared memory keep both sides coalesced; the
// padding column keeps the transposed reads free of bank conflicts.
constexpr int kTile = 32;
constexpr int kTileRows = 8;  // blockDim = (kTile, kTileRows): each thread moves kTile / kTileRows values

// Pixels go on the grid's x (up to 2^31 - 1 tiles; y and z stop at 65535).
// grid (HW tiles, C tiles, N); src fp32 [N][C][HW] -> dst 16-bit [N][HW][C].
template <bool kHalf>
__global__ void to16_nhwc_kernel(const float* src, std::uint16_t* dst, int channels, int pixels) {
  __shared__ float tile[kTile][kTile + 1];  // [c][hw]
  const std::size_t sample = std::size_t(blockIdx.z) * channels * pixels;
  const int hw0 = blockIdx.x * kTile, c0 = blockIdx.y * kTile;
  for (int r = threadIdx.y; r < kTile; r += kTileRows) {
    const int c = c0 + r, hw = hw0 + threadIdx.x;
    if (c < channels && hw < pixels) tile[r][threadIdx.x] = src[sample + std::size_t(c) * pixels + hw];
  }
  __syncthreads();
  for (int r = threadIdx.y; r < kTile; r += kTileRows) {
    const int hw = hw0 + r, c = c0 + threadIdx.x;
    if (c < channels && hw < pixels) {
      const float v = tile[threadIdx.x][r];
      dst[sample + std::size_t(hw) * channels + c] =
          kHalf ? compute::f16::float_to_half(v) : compute::f16::float_to_bf16(v);
    }
  }
}

// grid (HW tiles, C tiles, N); src 16-bit [N][HW][C] -> dst fp32 [N][C][HW].
template <bool kHalf>
__global__ void from16_nhwc_kernel(const std::uint16_t* src, float* dst, int channels, int pixels) {
  __shared__ float tile[kTile][kTile + 1];  // [hw][c]
  const std::size_t sample = std::size_t(blockIdx.z) * channels * pixels;
  const int hw0 = blockIdx.x * kTile, c0 = blockIdx.y * kTile;
  for (int r = threadIdx.y; r < kTile; r += kTileRows) {
    const int hw = hw0 + r, c = c0 + threadIdx.x;
    if (c < channels && hw < pixels) {
      const std::uint16_t v = src[sample + std::size_t(hw) * channels + c];
      tile[r][threadIdx.x] = kHalf ? compute::f16::half_to_float(v) : compute::f16::bf16_to_float(v);
    }
  }
  __syncthreads();
  for (int r = threadIdx.y; r < kTile; r += kTileRows) {
    const int c = c0 + r, hw = hw0 + threadIdx.x;
    if (c < channels && hw < pixels) dst[sample + std::size_t(c) * pixels + hw] = tile[threadIdx.x][r];
  }
}

unsigned tiles(int n) { return unsigned((n + kTile - 1) / kTile); }

// Blocks of 32 columns by kTileRows rows; grid (column blocks, row blocks up to 65535,
// looping): rows of `cols` values from src (row stride src_ld) to dst (row stride
// dst_ld); dst's padding is not written. (At 257 columns, 256-wide blocks left half
// their threads idle.)
template <bool kHalf>
__global__ void rows_to16_kernel(const float* src, long long src_ld, std::uint16_t* dst, long long dst_ld,
                                 long long rows, int cols) {
  const int col = blockIdx.x * kTile + threadIdx.x;
  if (col >= cols) return;
  const long long stride = static_cast<long long>(gridDim.y) * kTileRows;
  for (long long r = blockIdx.y * kTileRows + threadIdx.y; r < rows; r += stride) {
    const float v = src[r * src_ld + col];
    dst[r * dst_ld + col] = kHalf ? compute::f16::float_to_half(v) : compute::f16::float_to_bf16(v);
  }
}

__global__ void unscale_kernel(float* grads, std::size_t n, const float* inv_scale_at, float* found_inf) {
  const float inv_scale = *inv_scale_at;
  bool bad = false;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(blockDim.x) * gridDim.x) {
    const float v = grads[i] * inv_scale;
    grads[i] = v;
    bad |= !isfinite(v);
  }
  // Every writer writes the same value, so no atomic is needed; one write per warp.
  if (__any_sync(0xffffffffu, bad) && threadIdx.x % 32 == 0) *found_inf = 1.f;
}

// grid (value blocks, filters): each block row walks one filter's KRSC copy, writes
// coalesced; the reads stride by the kernel area (1 for the 1x1 convolutions, most
// of a bottleneck ResNet's).
template <bool kHalf>
__global__ void filters_to16_kernel(const FilterCast* table) {
  const FilterCast f = table[blockIdx.y];
  const int total = f.k * f.c * f.rs;
  for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < total; j += blockDim.x * gridDim.x) {
    const float v = f.src[compute::krsc_source_index(j, f.c, f.rs)];
    f.dst[j] = kHalf ? compute::f16::float_to_half(v) : compute::f16::float_to_bf16(v);
  }
}

// One thread per fp32 value of the OIHW gradient, written coalesced; the reads stride
// by the input channels within a kernel window (the plain cast for 1x1 filters).
template <bool kHalf>
__global__ void filter_from16_kernel(const std::uint16_t* src, float* dst, int in_channels, int kernel_area,
                                     int total) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += blockDim.x * gridDim.x) {
    const std::uint16_t v = src[compute::krsc_index_of(i, in_channels, kernel_area)];
    dst[i] = kHalf ? compute::f16::half_to_float(v) : compute::f16::bf16_to_float(v);
  }
}

__global__ void update_loss_scale_kernel(float* state, compute::LossScaleRule rule) {
  compute::advance_loss_scale(state, rule);
}

}  // namespace

void cast_to_16(const float* src, std::uint16_t* dst, Dims4 d, Format16 f, bool nhwc, cudaStream_t s) {
  const std::size_t total = d.numel();
  if (!total) return;
  const bool half = f == Format16::fp16;
  if (nhwc) {
    const int pixels = d.h * d.w;
    const dim3 grid(tiles(pixels), tiles(d.c), unsigned(d.n)), block(kTile, kTileRows);
    if (half) to16_nhwc_kernel<true><<<grid, block, 0, s>>>(src, dst, d.c, pixels);
    else to16_nhwc_kernel<false><<<grid, block, 0, s>>>(src, dst, d.c, pixels);
  } else {
    if (half) to16_kernel<true><<<blocks_for(total), kThreads, 0, s>>>(src, dst, total);
    else to16_kernel<false><<<blocks_for(total), kThreads, 0, s>>>(src, dst, total);
  }
}

void cast_rows_to_16(const float* src, long long src_ld, std::uint16_t* dst, long long dst_ld, long long rows,
                     int cols, Format16 f, cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return;
  const long long row_blocks = (rows + kTileRows - 1) / kTileRows;
  const dim3 grid(tiles(cols), unsigned(row_blocks < 65535 ? row_blocks : 65535)), block(kTile, kTileRows);
  if (f == Format16::fp16) rows_to16_kernel<true><<<grid, block, 0, s>>>(src, src_ld, dst, dst_ld, rows, cols);
  else rows_to16_kernel<false><<<grid, block, 0, s>>>(src, src_ld, dst, dst_ld, rows, cols);
}

void cast_from_16(const std::uint16_t* src, float* dst, Dims4 d, Format16 f, bool nhwc, cudaStream_t s) {
  const std::size_t total = d.numel();
  if (!total) return;
  const bool half = f == Format16::fp16;
  if (nhwc) {
    const int pixels = d.h * d.w;
    const dim3 grid(tiles(pixels), tiles(d.c), unsigned(d.n)), block(kTile, kTileRows);
    if (half) from16_nhwc_kernel<true><<<grid, block, 0, s>>>(src, dst, d.c, pixels);
    else from16_nhwc_kernel<false><<<grid, block, 0, s>>>(src, dst, d.c, pixels);
  } else {
    if (half) from16_kernel<true><<<blocks_for(total), kThreads, 0, s>>>(src, dst, total);
    else from16_kernel<false><<<blocks_for(total), kThreads, 0, s>>>(src, dst, total);
  }
}

void cast_filter_from_16(const std::uint16_t* src, float* dst, int k, int c, int rs, Format16 f, cudaStream_t s) {
  const std::size_t total = std::size_t(k) * c * rs;
  if (!total) return;
  const unsigned blocks = blocks_for(total);
  if (f == Format16::fp16) filter_from16_kernel<true><<<blocks, kThreads, 0, s>>>(src, dst, c, rs, int(total));
  else filter_from16_kernel<false><<<blocks, kThreads, 0, s>>>(src, dst, c, rs, int(total));
}

void unscale_and_check(float* grads, std::size_t n, const float* inv_scale, float* found_inf, cudaStream_t s) {
  if (n) unscale_kernel<<<blocks_for(n), kThreads, 0, s>>>(grads, n, inv_scale, found_inf);
}

void cast_filters_to_16(const FilterCast* table, int count, std::size_t max_values, Format16 f, cudaStream_t s) {
  if (count <= 0 || max_values == 0) return;
  const unsigned blocks = blocks_for(max_values) < 512u ? blocks_for(max_values) : 512u;
  const dim3 grid(blocks, unsigned(count));
  if (f == Format16::fp16) filters_to16_kernel<true><<<grid, kThreads, 0, s>>>(table);
  else filters_to16_kernel<false><<<grid, kThreads, 0, s>>>(table);
}

void update_loss_scale(float* state, const compute::LossScaleRule& rule, cudaStream_t s) {
  update_loss_scale_kernel<<<1, 1, 0, s>>>(state, rule);
}

}  // namespace trainer::kernels
