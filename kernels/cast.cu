// Mixed-precision kernels; see cast.cuh.
#include "cast.cuh"

#include "compute/float16.hpp"  // f16::float_to_bf16, float_to_half, bf16_to_float, half_to_float
#include "launch.cuh"           // blocks_for, kThreads

namespace trainer::kernels {
namespace {

using detail::blocks_for;
using detail::kThreads;

// Index of element i (in the order of the 16-bit tensor) in the NCHW fp32 tensor.
// Writes of the NHWC side are coalesced; the other side is strided (a plain
// gather, cheap next to the convolution it feeds).
__device__ inline std::size_t nchw_index_of_nhwc(std::size_t i, Dims4 d) {
  const std::size_t c = i % d.c;
  std::size_t t = i / d.c;
  const std::size_t w = t % d.w;
  t /= d.w;
  const std::size_t h = t % d.h;
  const std::size_t n = t / d.h;
  return ((n * d.c + c) * d.h + h) * d.w + w;
}
__device__ inline std::size_t nhwc_index_of_nchw(std::size_t i, Dims4 d) {
  const std::size_t w = i % d.w;
  std::size_t t = i / d.w;
  const std::size_t h = t % d.h;
  t /= d.h;
  const std::size_t c = t % d.c;
  const std::size_t n = t / d.c;
  return ((n * d.h + h) * d.w + w) * d.c + c;
}

template <bool kHalf, bool kNhwc>
__global__ void to16_kernel(const float* src, std::uint16_t* dst, Dims4 d, std::size_t total) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(blockDim.x) * gridDim.x) {
    const float v = src[kNhwc ? nchw_index_of_nhwc(i, d) : i];
    dst[i] = kHalf ? compute::f16::float_to_half(v) : compute::f16::float_to_bf16(v);
  }
}

template <bool kHalf, bool kNhwc>
__global__ void from16_kernel(const std::uint16_t* src, float* dst, Dims4 d, std::size_t total) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(blockDim.x) * gridDim.x) {
    const std::uint16_t v = src[kNhwc ? nhwc_index_of_nchw(i, d) : i];
    dst[i] = kHalf ? compute::f16::half_to_float(v) : compute::f16::bf16_to_float(v);
  }
}

__global__ void unscale_kernel(float* grads, std::size_t n, float inv_scale, float* found_inf) {
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

}  // namespace

void cast_to_16(const float* src, std::uint16_t* dst, Dims4 d, Format16 f, bool nhwc, cudaStream_t s) {
  const std::size_t total = d.numel();
  if (!total) return;
  const unsigned blocks = blocks_for(total);
  if (f == Format16::fp16) {
    if (nhwc) to16_kernel<true, true><<<blocks, kThreads, 0, s>>>(src, dst, d, total);
    else to16_kernel<true, false><<<blocks, kThreads, 0, s>>>(src, dst, d, total);
  } else {
    if (nhwc) to16_kernel<false, true><<<blocks, kThreads, 0, s>>>(src, dst, d, total);
    else to16_kernel<false, false><<<blocks, kThreads, 0, s>>>(src, dst, d, total);
  }
}

void cast_from_16(const std::uint16_t* src, float* dst, Dims4 d, Format16 f, bool nhwc, cudaStream_t s) {
  const std::size_t total = d.numel();
  if (!total) return;
  const unsigned blocks = blocks_for(total);
  if (f == Format16::fp16) {
    if (nhwc) from16_kernel<true, true><<<blocks, kThreads, 0, s>>>(src, dst, d, total);
    else from16_kernel<true, false><<<blocks, kThreads, 0, s>>>(src, dst, d, total);
  } else {
    if (nhwc) from16_kernel<false, true><<<blocks, kThreads, 0, s>>>(src, dst, d, total);
    else from16_kernel<false, false><<<blocks, kThreads, 0, s>>>(src, dst, d, total);
  }
}

void unscale_and_check(float* grads, std::size_t n, float inv_scale, float* found_inf, cudaStream_t s) {
  if (n) unscale_kernel<<<blocks_for(n), kThreads, 0, s>>>(grads, n, inv_scale, found_inf);
}

}  // namespace trainer::kernels
