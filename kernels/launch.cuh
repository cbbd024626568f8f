#pragma once
// Device-side helpers shared by the kernels in this folder (included by .cu files
// only): launch sizes for grid-stride loops and block-wide reductions.
#include <cuda_runtime.h>  // dim3, __syncthreads, warp shuffles
#include <cstddef>         // std::size_t
#include <cstdint>         // std::uintptr_t

namespace trainer::kernels::detail {

constexpr int kThreads = 256;  // threads per block for every 1-D kernel here

// Whether 16-byte vector accesses (float4, eight 16-bit values) may start at p.
inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Enough blocks to cover n elements with grid-stride loops, capped so very large
// buffers do not launch millions of blocks.
inline unsigned int blocks_for(std::size_t n, int threads = kThreads) {
  std::size_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > 65535u * 8u) b = 65535u * 8u;
  return static_cast<unsigned int>(b);
}

template <typename T>
__device__ inline T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

template <typename T>
__device__ inline T warp_max(T v) {
  for (int offset = 16; offset > 0; offset /= 2) {
    T o = __shfl_down_sync(0xffffffffu, v, offset);
    v = o > v ? o : v;
  }
  return v;
}

// Sum over the block; the result is valid in every thread. blockDim.x must be a
// multiple of 32 and at most 1024. `shared` needs 32 elements.
template <typename T>
__device__ inline T block_sum(T v, T* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  __syncthreads();  // `shared` may still be read by a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) / 32;
  T r = threadIdx.x < warps ? shared[threadIdx.x] : T(0);
  if (warp == 0) {
    r = warp_sum(r);
    if (lane == 0) shared[0] = r;
  }
  __syncthreads();
  return shared[0];
}

template <typename T>
__device__ inline T block_max(T v, T* shared, T lowest) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) / 32;
  T r = threadIdx.x < warps ? shared[threadIdx.x] : lowest;
  if (warp == 0) {
    r = warp_max(r);
    if (lane == 0) shared[0] = r;
  }
  __syncthreads();
  return shared[0];
}

}  // namespace trainer::kernels::detail
