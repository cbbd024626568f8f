#pragma once
// Mixed-precision kernels: casts between fp32 NCHW tensors and the 16-bit copies
// cuDNN convolves (bfloat16 or IEEE half, as raw 16-bit patterns, optionally in
// NHWC order, which tensor-core convolutions prefer), and the loss-scale unscale
// with its inf/NaN check and the scale's update. The rounding rules are compute/float16.hpp, the same
// functions the CPU backend's emulation uses (its CPU twin: cpu_conv.cpp and
// CpuBackend::unscale_and_check). Launchers only enqueue work on `stream`.
#include <cuda_runtime_api.h>  // cudaStream_t
#include <cstddef>             // std::size_t
#include <cstdint>             // std::uint16_t

#include "compute/loss_scale.hpp"  // LossScaleRule

namespace trainer::kernels {

enum class Format16 { bf16, fp16 };

// A 4-D tensor [n, c, h, w] (a filter [k, c, r, s] is the same shape).
struct Dims4 {
  int n, c, h, w;
  std::size_t numel() const { return std::size_t(n) * c * h * w; }
};

// dst = round(src): src fp32 NCHW; dst NHWC when `nhwc`, else NCHW.
void cast_to_16(const float* src, std::uint16_t* dst, Dims4 d, Format16 f, bool nhwc, cudaStream_t stream);
// dst = round(src) for `rows` rows of `cols` values, row strides src_ld and dst_ld
// (a 16-bit copy with its rows padded for aligned matrix products).
void cast_rows_to_16(const float* src, long long src_ld, std::uint16_t* dst, long long dst_ld, long long rows,
                     int cols, Format16 f, cudaStream_t stream);
// dst = float(src): src NHWC when `nhwc`, else NCHW; dst fp32 NCHW.
void cast_from_16(const std::uint16_t* src, float* dst, Dims4 d, Format16 f, bool nhwc, cudaStream_t stream);

// One filter of cast_filters_to_16: src fp32 OIHW [k][c][r][r] (rs = r * r values
// per plane), dst its 16-bit KRSC copy, as cast_to_16 with nhwc writes it.
struct FilterCast {
  const float* src;
  std::uint16_t* dst;
  int k, c, rs;
};
// Every filter of `table` (device memory, `count` entries, the largest `max_values`
// values) cast in one launch (compute::krsc_source_index), each value rounded as
// cast_to_16 rounds it.
void cast_filters_to_16(const FilterCast* table, int count, std::size_t max_values, Format16 f,
                        cudaStream_t stream);

// A weight gradient from cuDNN's 16-bit KRSC [k][r][r][c] (rs = r * r) into the fp32
// OIHW parameters' layout (compute::krsc_index_of): what cast_from_16 with nhwc gives
// for [n=k, c, h*w=rs], in a flat launch. The tiled transpose took 1.06 ms over the 60
// weight gradients of a bf16 ResNet-50 step on an H200 (2026-11-27): at one pixel a
// sample (1x1 filters) its 32x32 tiles held 32 values.
void cast_filter_from_16(const std::uint16_t* src, float* dst, int k, int c, int rs, Format16 f,
                         cudaStream_t stream);

// grads[i] *= inv_scale[0] (device memory, read when the kernel runs); found_inf[0]
// = 1 when any result is inf or NaN (never cleared here, so ranges can share the
// flag; the caller zeroes it first).
void unscale_and_check(float* grads, std::size_t n, const float* inv_scale, float* found_inf, cudaStream_t stream);
// The loss scale's update after the check: compute::advance_loss_scale over the
// compute::kLossScaleSlots floats at `state`, on one thread.
void update_loss_scale(float* state, const compute::LossScaleRule& rule, cudaStream_t stream);

}  // namespace trainer::kernels
