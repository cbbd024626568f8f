// MBConv kernels; see mbconv.cuh. Elementwise work in grid-stride loops, one thread
// per output of the depthwise convolutions (the depthwise layers are memory-bound:
// k x k taps per value), and one block per row or per filter tap for the sums.
#include "mbconv.cuh"

#include "compute/mbconv_rule.hpp"  // depthwise_output, depthwise_input_gradient, silu_*, mbconv_sigmoid
#include "launch.cuh"               // blocks_for, kThreads, block_sum

namespace trainer::kernels {
namespace {

using detail::block_sum;
using detail::blocks_for;
using detail::kThreads;

#define GRID_STRIDE(i, n) \
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < (n); i += std::size_t(blockDim.x) * gridDim.x)

__global__ void depthwise_forward_kernel(const float* x, const float* w, float* y, int n, int c, int h, int wd,
                                         int oh, int ow, int k, int stride, int pad) {
  const std::size_t total = std::size_t(n) * c * oh * ow;
  GRID_STRIDE(i, total) {
    const int ox = int(i % ow), oy = int((i / ow) % oh);
    const std::size_t plane = i / (std::size_t(oh) * ow);  // n * c + channel
    const int channel = int(plane % c);
    y[i] = compute::depthwise_output(x + plane * h * wd, h, wd, w + std::size_t(channel) * k * k, k, stride, pad,
                                     oy, ox);
  }
}

__global__ void depthwise_backward_data_kernel(const float* dy, const float* w, float* dx, int n, int c, int h,
                                               int wd, int oh, int ow, int k, int stride, int pad) {
  const std::size_t total = std::size_t(n) * c * h * wd;
  GRID_STRIDE(i, total) {
    const int ix = int(i % wd), iy = int((i / wd) % h);
    const std::size_t plane = i / (std::size_t(h) * wd);
    const int channel = int(plane % c);
    dx[i] = compute::depthwise_input_gradient(dy + plane * oh * ow, oh, ow, w + std::size_t(channel) * k * k, k,
                                              stride, pad, iy, ix);
  }
}

// Block (channel, tap): the sum over the batch's outputs of dy times the input the
// tap met.
__global__ void depthwise_backward_weights_kernel(const float* x, const float* dy, float* dw, int n, int c, int h,
                                                  int wd, int oh, int ow, int k, int stride, int pad) {
  __shared__ double shared[32];
  const int tap = blockIdx.x % (k * k), channel = blockIdx.x / (k * k);
  const int ti = tap / k, tj = tap % k;
  const std::size_t per_image = std::size_t(oh) * ow, terms = per_image * n;
  double sum = 0;
  for (std::size_t t = threadIdx.x; t < terms; t += blockDim.x) {
    const int image = int(t / per_image);
    const int oy = int((t % per_image) / ow), ox = int(t % ow);
    const int iy = oy * stride - pad + ti, ix = ox * stride - pad + tj;
    if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
    const std::size_t plane = std::size_t(image) * c + channel;
    sum += double(dy[plane * per_image + std::size_t(oy) * ow + ox]) * x[plane * h * wd + std::size_t(iy) * wd + ix];
  }
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0) dw[blockIdx.x] = float(sum);
}

// Block (channel, chunk of the batch's output rows): every tap's sum over the chunk at
// once, so each dy value is read once and each x value by the k x k taps that meet it
// from the cache; the chunks fill the GPU where a layer has few channels. Partial
// sums in double: partials[(chunk * c + channel) * K * K + tap].
template <int K>
__global__ void depthwise_weight_partials_kernel(const float* x, const float* dy, double* partials, int n, int c,
                                                 int h, int wd, int oh, int ow, int stride, int pad,
                                                 int rows_per_chunk) {
  __shared__ double shared[32];
  const int channel = blockIdx.x, chunk = blockIdx.y;
  const int first_row = chunk * rows_per_chunk;
  const int last_row = min(n * oh, first_row + rows_per_chunk);
  const std::size_t terms = first_row < last_row ? std::size_t(last_row - first_row) * ow : 0;
  double acc[K * K];
#pragma unroll
  for (int tap = 0; tap < K * K; ++tap) acc[tap] = 0;
  for (std::size_t t = threadIdx.x; t < terms; t += blockDim.x) {
    const int row = first_row + int(t / ow), ox = int(t % ow);
    const int image = row / oh, oy = row % oh;
    const std::size_t plane = std::size_t(image) * c + channel;
    const double g = dy[plane * oh * ow + std::size_t(oy) * ow + ox];
    const float* in = x + plane * h * wd;
#pragma unroll
    for (int ti = 0; ti < K; ++ti) {
      const int iy = oy * stride - pad + ti;
      if (iy < 0 || iy >= h) continue;
#pragma unroll
      for (int tj = 0; tj < K; ++tj) {
        const int ix = ox * stride - pad + tj;
        if (ix >= 0 && ix < wd) acc[ti * K + tj] += g * in[std::size_t(iy) * wd + ix];
      }
    }
  }
  double* out = partials + (std::size_t(chunk) * c + channel) * (K * K);
#pragma unroll
  for (int tap = 0; tap < K * K; ++tap) {
    const double sum = block_sum(acc[tap], shared);
    if (threadIdx.x == 0) out[tap] = sum;
  }
}

// dw[i] = the chunks' partial sums of filter value i, added in chunk order.
__global__ void depthwise_weight_sum_kernel(const double* partials, float* dw, int chunks, int count) {
  GRID_STRIDE(i, std::size_t(count)) {
    double sum = 0;
    for (int chunk = 0; chunk < chunks; ++chunk) sum += partials[std::size_t(chunk) * count + i];
    dw[i] = float(sum);
  }
}

__global__ void silu_forward_kernel(const float* x, float* y, std::size_t n) {
  GRID_STRIDE(i, n) y[i] = compute::silu_value(x[i]);
}
__global__ void silu_backward_kernel(const float* x, const float* dy, float* dx, std::size_t n) {
  GRID_STRIDE(i, n) dx[i] = compute::silu_gradient(x[i], dy[i]);
}

__global__ void gate_forward_kernel(const float* x, const float* z, float* y, int rows, int width) {
  const std::size_t total = std::size_t(rows) * width;
  GRID_STRIDE(i, total) y[i] = x[i] * compute::mbconv_sigmoid(z[i / width]);
}

__global__ void gate_backward_kernel(const float* x, const float* z, const float* dy, float* dx, float* dz,
                                     int width) {
  __shared__ double shared[32];
  const std::size_t base = std::size_t(blockIdx.x) * width;
  const float s = compute::mbconv_sigmoid(z[blockIdx.x]);
  double sum = 0;
  for (int j = threadIdx.x; j < width; j += blockDim.x) {
    sum += double(dy[base + j]) * x[base + j];
    dx[base + j] = dy[base + j] * s;
  }
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0) dz[blockIdx.x] = float(sum) * s * (1.f - s);
}

__global__ void row_mean_forward_kernel(const float* x, float* out, int width) {
  __shared__ double shared[32];
  const std::size_t base = std::size_t(blockIdx.x) * width;
  double sum = 0;
  for (int j = threadIdx.x; j < width; j += blockDim.x) sum += x[base + j];
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0) out[blockIdx.x] = float(sum / width);
}

__global__ void row_mean_backward_add_kernel(const float* dmean, float* dx, int rows, int width) {
  const std::size_t total = std::size_t(rows) * width;
  GRID_STRIDE(i, total) dx[i] += dmean[i / width] / float(width);
}

__global__ void scale_rows_kernel(const float* x, const float* factors, float* y, int rows, int width) {
  const std::size_t total = std::size_t(rows) * width;
  GRID_STRIDE(i, total) y[i] = x[i] * factors[i / width];
}

__global__ void stochastic_depth_factors_kernel(const float* key, std::uint32_t salt, float p, float* factors,
                                               int rows) {
  GRID_STRIDE(i, std::size_t(rows)) factors[i] = compute::stochastic_depth_factor(key[0], key[1], salt, std::uint32_t(i), p);
}

// Threads for a block that sums `terms` values: a multiple of 32, at most kThreads.
int sum_threads(std::size_t terms) {
  const std::size_t t = (terms + 31) / 32 * 32;
  return t < 32 ? 32 : t > std::size_t(kThreads) ? kThreads : int(t);
}

}  // namespace

void depthwise_forward(const float* x, const float* w, float* y, int n, int c, int h, int wd, int oh, int ow, int k,
                       int stride, int pad, cudaStream_t stream) {
  const std::size_t total = std::size_t(n) * c * oh * ow;
  if (total == 0) return;
  depthwise_forward_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, w, y, n, c, h, wd, oh, ow, k, stride, pad);
}

void depthwise_backward_data(const float* dy, const float* w, float* dx, int n, int c, int h, int wd, int oh, int ow,
                             int k, int stride, int pad, cudaStream_t stream) {
  const std::size_t total = std::size_t(n) * c * h * wd;
  if (total == 0) return;
  depthwise_backward_data_kernel<<<blocks_for(total), kThreads, 0, stream>>>(dy, w, dx, n, c, h, wd, oh, ow, k, stride,
                                                                             pad);
}

void depthwise_backward_weights(const float* x, const float* dy, float* dw, int n, int c, int h, int wd, int oh,
                                int ow, int k, int stride, int pad, cudaStream_t stream) {
  if (c == 0 || k == 0) return;
  const int threads = sum_threads(std::size_t(n) * oh * ow);
  depthwise_backward_weights_kernel<<<unsigned(c) * k * k, threads, 0, stream>>>(x, dy, dw, n, c, h, wd, oh, ow, k,
                                                                                 stride, pad);
}

void depthwise_backward_weights_chunked(const float* x, const float* dy, float* dw, double* partials,
                                        const compute::DepthwiseWeightChunks& plan, int n, int c, int h, int wd, int oh, int ow,
                                        int k, int stride, int pad, cudaStream_t stream) {
  if (c == 0 || plan.chunks < 1 || (k != 3 && k != 5)) return;  // the caller checks: depthwise_weight_chunks
  const dim3 grid(unsigned(c), unsigned(plan.chunks));
  if (k == 3) {
    depthwise_weight_partials_kernel<3><<<grid, kThreads, 0, stream>>>(x, dy, partials, n, c, h, wd, oh, ow, stride,
                                                                      pad, plan.rows_per_chunk);
  } else {
    depthwise_weight_partials_kernel<5><<<grid, kThreads, 0, stream>>>(x, dy, partials, n, c, h, wd, oh, ow, stride,
                                                                      pad, plan.rows_per_chunk);
  }
  const int count = c * k * k;
  depthwise_weight_sum_kernel<<<blocks_for(std::size_t(count)), kThreads, 0, stream>>>(partials, dw, plan.chunks,
                                                                                       count);
}

void silu_forward(const float* x, float* y, std::size_t count, cudaStream_t stream) {
  if (count) silu_forward_kernel<<<blocks_for(count), kThreads, 0, stream>>>(x, y, count);
}

void silu_backward(const float* x, const float* dy, float* dx, std::size_t count, cudaStream_t stream) {
  if (count) silu_backward_kernel<<<blocks_for(count), kThreads, 0, stream>>>(x, dy, dx, count);
}

void gate_forward(const float* x, const float* z, float* y, int rows, int width, cudaStream_t stream) {
  const std::size_t total = std::size_t(rows) * width;
  if (total) gate_forward_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, z, y, rows, width);
}

void gate_backward(const float* x, const float* z, const float* dy, float* dx, float* dz, int rows, int width,
                   cudaStream_t stream) {
  if (rows > 0) gate_backward_kernel<<<unsigned(rows), sum_threads(std::size_t(width)), 0, stream>>>(x, z, dy, dx, dz, width);
}

void row_mean_forward(const float* x, float* out, int rows, int width, cudaStream_t stream) {
  if (rows > 0) row_mean_forward_kernel<<<unsigned(rows), sum_threads(std::size_t(width)), 0, stream>>>(x, out, width);
}

void row_mean_backward_add(const float* dmean, float* dx, int rows, int width, cudaStream_t stream) {
  const std::size_t total = std::size_t(rows) * width;
  if (total) row_mean_backward_add_kernel<<<blocks_for(total), kThreads, 0, stream>>>(dmean, dx, rows, width);
}

void scale_rows(const float* x, const float* factors, float* y, int rows, int width, cudaStream_t stream) {
  const std::size_t total = std::size_t(rows) * width;
  if (total) scale_rows_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, factors, y, rows, width);
}

void stochastic_depth_factors(const float* key, std::uint32_t salt, float p, float* factors, int rows,
                              cudaStream_t stream) {
  if (rows > 0)
    stochastic_depth_factors_kernel<<<blocks_for(std::size_t(rows)), kThreads, 0, stream>>>(key, salt, p, factors, rows);
}

}  // namespace trainer::kernels
