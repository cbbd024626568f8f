// The rotary position embedding kernels; see rotary.cuh. The rotation: one thread
// per pair, which reads two floats of one head and writes them back, so in-place is
// safe. The tables: one thread per entry (a few thousand; double cos / sin, as the
// host's tables).
#include "rotary.cuh"

#include <cstddef>  // std::size_t

#include "compute/rotary_rule.hpp"  // rotate_pair, rotary_angle, rotary_cos_sin
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

__global__ void rotary_tables_kernel(const float* scale, const float* inv_freq, float* cos, float* sin, int grid_h,
                                     int grid_w, int half, std::size_t entries) {
  const float factor = *scale;
  const int quarter = half / 2;
  for (std::size_t t = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; t < entries;
       t += std::size_t(blockDim.x) * gridDim.x) {
    const int i = int(t % half);
    const int p = int(t / half);
    const float angle = compute::rotary_angle(p / grid_w, p % grid_w, i, grid_h, grid_w, quarter, inv_freq[i % quarter],
                                              factor);
    compute::rotary_cos_sin(angle, cos[t], sin[t]);
  }
}

}  // namespace

void rotary_tables(const float* scale, const float* inv_freq, float* cos, float* sin, int grid_h, int grid_w,
                   int head_dim, cudaStream_t stream) {
  const int half = head_dim / 2;
  const std::size_t entries = std::size_t(grid_h) * grid_w * half;
  if (entries == 0) return;
  rotary_tables_kernel<<<blocks_for(entries), kThreads, 0, stream>>>(scale, inv_freq, cos, sin, grid_h, grid_w, half,
                                                                     entries);
}

void rotary(float* x, const float* cos, const float* sin, int batch, int tokens, int prefix, int heads, int head_dim,
            bool inverse, cudaStream_t stream) {
  const int half = head_dim / 2;
  const std::size_t pairs = std::size_t(batch) * (tokens - prefix) * heads * half;
  if (pairs == 0) return;
  rotary_kernel<<<blocks_for(pairs), kThreads, 0, stream>>>(x, cos, sin, tokens, prefix, heads, half, pairs, inverse);
}

}  // namespace trainer::kernels
