// Elementwise kernels; see elementwise.cuh.
#include "elementwise.cuh"

#include "compute/affine_points.hpp"  // AffineMap2D, apply_affine
#include "launch.cuh"                 // blocks_for, kThreads, block_sum

namespace trainer::kernels {
namespace {

using detail::blocks_for;
using detail::kThreads;

#define GRID_STRIDE(i, n) \
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < (n); i += std::size_t(blockDim.x) * gridDim.x)

__global__ void fill_kernel(float* dst, float value, std::size_t n) {
  GRID_STRIDE(i, n) dst[i] = value;
}
__global__ void set_values_kernel(float* dst, SmallValues v) {
  if (threadIdx.x < v.count) dst[threadIdx.x] = v.values[threadIdx.x];
}
__global__ void scale_by_kernel(float* x, const float* factor, std::size_t n) {
  const float alpha = *factor;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(blockDim.x) * gridDim.x)
    x[i] *= alpha;
}

__global__ void scale_kernel(float* x, float alpha, std::size_t n) {
  GRID_STRIDE(i, n) x[i] *= alpha;
}
__global__ void accumulate_kernel(const float* x, float* out, std::size_t n) {
  GRID_STRIDE(i, n) out[i] += x[i];
}
__global__ void affine_points_kernel(float* xy, std::size_t n, const float* coefficients) {
  compute::AffineMap2D map;
  for (int j = 0; j < 6; ++j) map.m[j] = coefficients[j];
  GRID_STRIDE(i, n) compute::apply_affine(map, xy + 2 * i);
}
__global__ void relu_forward_kernel(const float* x, float* y, std::size_t n) {
  GRID_STRIDE(i, n) {
    const float v = x[i];
    y[i] = v > 0.f ? v : (isnan(v) ? v : 0.f);  // NaN propagates, as on the CPU
  }
}
__global__ void relu_backward_kernel(const float* y, const float* dy, float* dx, std::size_t n) {
  GRID_STRIDE(i, n) dx[i] = y[i] > 0.f ? dy[i] : 0.f;
}
__global__ void add_relu_kernel(const float* a, const float* b, float* y, std::size_t n) {
  GRID_STRIDE(i, n) {
    const float v = a[i] + b[i];
    y[i] = v > 0.f ? v : (isnan(v) ? v : 0.f);
  }
}
__global__ void add_channel_bias_kernel(float* y, const float* bias, int c, int plane, std::size_t n) {
  GRID_STRIDE(i, n) y[i] += bias[(i / plane) % c];
}
#undef GRID_STRIDE
}  // namespace

void fill(float* dst, float value, std::size_t n, cudaStream_t s) {
  if (n) fill_kernel<<<blocks_for(n), kThreads, 0, s>>>(dst, value, n);
}
void set_values(float* dst, const SmallValues& v, cudaStream_t s) {
  if (v.count > 0) set_values_kernel<<<1, 32, 0, s>>>(dst, v);
}
void scale_by(float* x, const float* factor, std::size_t n, cudaStream_t s) {
  if (n) scale_by_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, factor, n);
}

void scale(float* x, float alpha, std::size_t n, cudaStream_t s) {
  if (n) scale_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, alpha, n);
}
void accumulate(const float* x, float* out, std::size_t n, cudaStream_t s) {
  if (n) accumulate_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, out, n);
}
void affine_points(float* xy, std::size_t points, const float* map, cudaStream_t s) {
  if (points) affine_points_kernel<<<blocks_for(points), kThreads, 0, s>>>(xy, points, map);
}
void relu_forward(const float* x, float* y, std::size_t n, cudaStream_t s) {
  if (n) relu_forward_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, y, n);
}
void relu_backward(const float* y, const float* dy, float* dx, std::size_t n, cudaStream_t s) {
  if (n) relu_backward_kernel<<<blocks_for(n), kThreads, 0, s>>>(y, dy, dx, n);
}
void add_relu_forward(const float* a, const float* b, float* y, std::size_t n, cudaStream_t s) {
  if (n) add_relu_kernel<<<blocks_for(n), kThreads, 0, s>>>(a, b, y, n);
}
void add_channel_bias(float* y, const float* bias, int n, int c, int plane, cudaStream_t s) {
  const std::size_t total = std::size_t(n) * c * plane;
  if (total) add_channel_bias_kernel<<<blocks_for(total), kThreads, 0, s>>>(y, bias, c, plane, total);
}

}  // namespace trainer::kernels
