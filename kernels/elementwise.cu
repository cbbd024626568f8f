// Elementwise kernels; see elementwise.cuh.
#include "elementwise.cuh"

#include <initializer_list>

#include "compute/affine_points.hpp"  // AffineMap2D, apply_affine
#include "launch.cuh"                 // blocks_for, kThreads, block_sum

namespace trainer::kernels {
namespace {

using detail::blocks_for;
using detail::kThreads;

#define GRID_STRIDE(i, n) \
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < (n); i += std::size_t(blockDim.x) * gridDim.x)

// The float32 passes over whole activations (the fp32 path's ReLU backward and
// residual-gradient add: about 1 ms of ResNet-50's step at batch 16 on an H200,
// 2026-11-28, some 1.5 to 1.9 times their bytes' time at its peak bandwidth, an
// estimate from the tensor sizes) move float4s where every operand is 16-byte
// aligned, then the last n % 4 values one by one: the same value per element.
// Op::one(i) handles element i; Op::four(i) elements 4i .. 4i + 3.
template <typename Op>
__global__ void vector_pass_kernel(Op op, std::size_t n, bool vectors) {
  const std::size_t start = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x, stride = std::size_t(blockDim.x) * gridDim.x;
  const std::size_t n4 = vectors ? n / 4 : 0;
  for (std::size_t i = start; i < n4; i += stride) op.four(i);
  for (std::size_t i = 4 * n4 + start; i < n; i += stride) op.one(i);
}
template <typename Op>
void vector_pass(Op op, std::size_t n, std::initializer_list<const void*> operands, cudaStream_t s) {
  if (!n) return;
  bool vectors = true;
  for (const void* p : operands) vectors = vectors && detail::aligned16(p);
  vector_pass_kernel<<<blocks_for(vectors ? (n + 3) / 4 : n), kThreads, 0, s>>>(op, n, vectors);
}

__device__ inline float relu_value(float v) { return v > 0.f ? v : (isnan(v) ? v : 0.f); }  // NaN propagates, as on the CPU

struct AccumulateOp {
  const float* x;
  float* out;
  __device__ void one(std::size_t i) const { out[i] += x[i]; }
  __device__ void four(std::size_t i) const {
    const float4 a = reinterpret_cast<const float4*>(x)[i];
    float4& o = reinterpret_cast<float4*>(out)[i];
    const float4 b = o;
    o = float4{b.x + a.x, b.y + a.y, b.z + a.z, b.w + a.w};
  }
};
struct ReluForwardOp {
  const float* x;
  float* y;
  __device__ void one(std::size_t i) const { y[i] = relu_value(x[i]); }
  __device__ void four(std::size_t i) const {
    const float4 v = reinterpret_cast<const float4*>(x)[i];
    reinterpret_cast<float4*>(y)[i] = float4{relu_value(v.x), relu_value(v.y), relu_value(v.z), relu_value(v.w)};
  }
};
struct ReluBackwardOp {
  const float* y;
  const float* dy;
  float* dx;
  __device__ void one(std::size_t i) const { dx[i] = y[i] > 0.f ? dy[i] : 0.f; }
  __device__ void four(std::size_t i) const {
    const float4 v = reinterpret_cast<const float4*>(y)[i], g = reinterpret_cast<const float4*>(dy)[i];
    reinterpret_cast<float4*>(dx)[i] =
        float4{v.x > 0.f ? g.x : 0.f, v.y > 0.f ? g.y : 0.f, v.z > 0.f ? g.z : 0.f, v.w > 0.f ? g.w : 0.f};
  }
};
struct AddReluOp {
  const float* a;
  const float* b;
  float* y;
  __device__ void one(std::size_t i) const { y[i] = relu_value(a[i] + b[i]); }
  __device__ void four(std::size_t i) const {
    const float4 u = reinterpret_cast<const float4*>(a)[i], v = reinterpret_cast<const float4*>(b)[i];
    reinterpret_cast<float4*>(y)[i] =
        float4{relu_value(u.x + v.x), relu_value(u.y + v.y), relu_value(u.z + v.z), relu_value(u.w + v.w)};
  }
};

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
__global__ void affine_points_kernel(float* xy, std::size_t n, const float* coefficients) {
  compute::AffineMap2D map;
  for (int j = 0; j < 6; ++j) map.m[j] = coefficients[j];
  GRID_STRIDE(i, n) compute::apply_affine(map, xy + 2 * i);
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
  vector_pass(AccumulateOp{x, out}, n, {x, out}, s);
}
void affine_points(float* xy, std::size_t points, const float* map, cudaStream_t s) {
  if (points) affine_points_kernel<<<blocks_for(points), kThreads, 0, s>>>(xy, points, map);
}
void relu_forward(const float* x, float* y, std::size_t n, cudaStream_t s) {
  vector_pass(ReluForwardOp{x, y}, n, {x, y}, s);
}
void relu_backward(const float* y, const float* dy, float* dx, std::size_t n, cudaStream_t s) {
  vector_pass(ReluBackwardOp{y, dy, dx}, n, {y, dy, dx}, s);
}
void add_relu_forward(const float* a, const float* b, float* y, std::size_t n, cudaStream_t s) {
  vector_pass(AddReluOp{a, b, y}, n, {a, b, y}, s);
}
void add_channel_bias(float* y, const float* bias, int n, int c, int plane, cudaStream_t s) {
  const std::size_t total = std::size_t(n) * c * plane;
  if (total) add_channel_bias_kernel<<<blocks_for(total), kThreads, 0, s>>>(y, bias, c, plane, total);
}

}  // namespace trainer::kernels
