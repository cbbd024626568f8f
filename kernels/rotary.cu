// The rotary position embedding kernel; see rotary.cuh. One thread per pair: a
// thread reads two floats of one head and writes them back, so in-place is safe.
#include "rotary.cuh"

#include <cstddef>  // std::size_t

#include "compute/rotary_rule.hpp"  // rotate_pair
#include "launch.cuh"               // blocks_for, kThreads

namespace trainer::kernels {
namespace {

using detail::blocks_for;
using detail::kThreads;

__global__ void rotary_kernel(float* x, const float* cos, const float* sin, int tokens, int prefix, int heads,
                              int half, std::size_t pairs, bool inverse) {
  const int patches = tokens - prefix;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < pairs;
       i += std::size_t(blockDim.x) * gridDim.x) {
    // i = ((image * patches + p) * heads + h) * half + k
    const int k = int(i % half);
    const std::size_t head_row = i / half;
    const int h = int(head_row % heads);
    const std::size_t row = head_row / heads;
    const int p = int(row % patches);
    const std::size_t image = row / patches;
    float* head = x + ((image * tokens + prefix + p) * heads + h) * std::size_t(2 * half);
    const std::size_t t = std::size_t(p) * half + k;
    float a = head[k], b = head[k + half];
    compute::rotate_pair(a, b, cos[t], sin[t], inverse);
    head[k] = a;
    head[k + half] = b;
  }
}

}  // namespace

void rotary(float* x, const float* cos, const float* sin, int batch, int tokens, int prefix, int heads, int head_dim,
            bool inverse, cudaStream_t stream) {
  const int half = head_dim / 2;
  const std::size_t pairs = std::size_t(batch) * (tokens - prefix) * heads * half;
  if (pairs == 0) return;
  rotary_kernel<<<blocks_for(pairs), kThreads, 0, stream>>>(x, cos, sin, tokens, prefix, heads, half, pairs, inverse);
}

}  // namespace trainer::kernels
