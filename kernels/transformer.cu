// Transformer kernels; see transformer.cuh. One warp per row for the row-wise ops
// (rows are 384..1024 wide in ViT-S/B; attention rows are the token count), and
// 32 columns x 32 row lanes per block for the column sums.
#include "transformer.cuh"

#include <cmath>  // INFINITY

#include "compute/float16.hpp"  // f16::float_to_bf16, float_to_half
#include "launch.cuh"            // blocks_for, kThreads

namespace trainer::kernels {
namespace {

using detail::blocks_for;
using detail::kThreads;

constexpr int kWarpsPerBlock = kThreads / 32;

#define GRID_STRIDE(i, n) \
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < (n); i += std::size_t(blockDim.x) * gridDim.x)

// The sum over the warp, in every lane.
__device__ inline float warp_all_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ inline float warp_all_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// The row this warp works on, or -1.
__device__ inline int warp_row(int rows) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  return row < rows ? row : -1;
}
inline unsigned int row_blocks(int rows) { return static_cast<unsigned int>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock); }

// The 16-bit bits of v in format f (the rules of cast_to_16).
__device__ inline std::uint16_t to_16(float v, Format16 f) {
  return f == Format16::bf16 ? compute::f16::float_to_bf16(v) : compute::f16::float_to_half(v);
}

__global__ void layer_norm_forward_kernel(const float* x, const float* gamma, const float* beta, float* y,
                                          std::uint16_t* y16, Format16 f, float* mean, float* rstd, int rows,
                                          int width, float eps) {
  const int row = warp_row(rows), lane = threadIdx.x % 32;
  if (row < 0) return;
  const float* xr = x + std::size_t(row) * width;
  float sum = 0.f;
  for (int j = lane; j < width; j += 32) sum += xr[j];
  const float mu = warp_all_sum(sum) / width;
  float sq = 0.f;
  for (int j = lane; j < width; j += 32) sq += (xr[j] - mu) * (xr[j] - mu);
  const float r = rsqrtf(warp_all_sum(sq) / width + eps);
  float* yr = y + std::size_t(row) * width;
  std::uint16_t* y16r = y16 ? y16 + std::size_t(row) * width : nullptr;
  for (int j = lane; j < width; j += 32) {
    const float out = (xr[j] - mu) * r * gamma[j] + beta[j];
    yr[j] = out;
    if (y16r) y16r[j] = to_16(out, f);
  }
  if (lane == 0) {
    mean[row] = mu;
    rstd[row] = r;
  }
}

__global__ void layer_norm_backward_input_kernel(const float* x, const float* gamma, const float* mean,
                                                 const float* rstd, const float* dy, float* dx, int rows, int width) {
  const int row = warp_row(rows), lane = threadIdx.x % 32;
  if (row < 0) return;
  const float* xr = x + std::size_t(row) * width;
  const float* dyr = dy + std::size_t(row) * width;
  const float mu = mean[row], r = rstd[row];
  float sum_g = 0.f, sum_gx = 0.f;
  for (int j = lane; j < width; j += 32) {
    const float g = dyr[j] * gamma[j];
    sum_g += g;
    sum_gx += g * (xr[j] - mu) * r;
  }
  const float mg = warp_all_sum(sum_g) / width, mgx = warp_all_sum(sum_gx) / width;
  float* dxr = dx + std::size_t(row) * width;
  for (int j = lane; j < width; j += 32) dxr[j] = r * (dyr[j] * gamma[j] - mg - (xr[j] - mu) * r * mgx);
}

// Column reductions: block (32, 32) covers 32 columns of one chunk of rows
// (blockIdx.y); each of the 32 row lanes sums every 32nd row of the chunk in double,
// then the lane sums are added in order through shared memory. One chunk writes the
// column's float; several write double partials, which column_chunks_kernel adds in
// chunk order (deterministic). Chunks keep the GPU busy: one chunk gave a ViT-S
// layer's bias and LayerNorm gradients 12 blocks, each thread summing 130 rows
// serially (a reviewer's reading; unmeasured).
template <class Term>
__device__ void column_reduce(int rows, int width, int rows_per_chunk, float* out, double* partials, Term term) {
  __shared__ double partial[32][33];
  const int col = blockIdx.x * 32 + threadIdx.x;
  const int begin = int(blockIdx.y) * rows_per_chunk;
  const int end = rows - begin < rows_per_chunk ? rows : begin + rows_per_chunk;
  double acc = 0.0;
  if (col < width)
    for (int i = begin + threadIdx.y; i < end; i += 32) acc += term(i, col);
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < width) {
    double sum = 0.0;
    for (int k = 0; k < 32; ++k) sum += partial[k][threadIdx.x];
    if (gridDim.y == 1) out[col] = float(sum);
    else partials[std::size_t(blockIdx.y) * width + col] = sum;
  }
}

__global__ void column_chunks_kernel(const double* partials, int chunks, int width, float* out) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= width) return;
  double sum = 0.0;
  for (int c = 0; c < chunks; ++c) sum += partials[std::size_t(c) * width + col];
  out[col] = float(sum);
}

const dim3 kColumnBlock(32, 32);

// The launch of one column reduction: 32 columns by one chunk of rows per block.
struct ColumnLaunch {
  dim3 grid;
  int rows_per_chunk;
};
ColumnLaunch column_launch(int rows, int width) {
  const int chunks = column_reduce_chunks(rows);
  const int per_chunk = (rows + chunks - 1) / chunks;
  return {dim3(static_cast<unsigned int>((width + 31) / 32), static_cast<unsigned int>(chunks)),
          per_chunk < 1 ? 1 : per_chunk};
}
void finish_columns(const double* partials, int rows, int width, float* out, cudaStream_t stream) {
  const int chunks = column_reduce_chunks(rows);
  if (chunks > 1)
    column_chunks_kernel<<<(width + kThreads - 1) / kThreads, kThreads, 0, stream>>>(partials, chunks, width, out);
}

__global__ void layer_norm_dgamma_kernel(const float* x, const float* mean, const float* rstd, const float* dy,
                                         float* dgamma, double* partials, int rows, int width, int per_chunk) {
  column_reduce(rows, width, per_chunk, dgamma, partials, [&](int i, int j) {
    const std::size_t at = std::size_t(i) * width + j;
    return double(dy[at]) * double((x[at] - mean[i]) * rstd[i]);
  });
}

__global__ void column_sums_kernel(const float* a, const float* b, float* out, double* partials, int rows, int width,
                                   int per_chunk) {
  column_reduce(rows, width, per_chunk, out, partials, [&](int i, int j) {
    const std::size_t at = std::size_t(i) * width + j;
    return b ? double(a[at]) * double(b[at]) : double(a[at]);
  });
}

__global__ void gelu_forward_kernel(const float* x, float* y, std::uint16_t* y16, Format16 f, std::size_t n) {
  GRID_STRIDE(i, n) {
    const float v = x[i];
    const float out = 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
    y[i] = out;
    if (y16) y16[i] = to_16(out, f);
  }
}
__global__ void gelu_backward_kernel(const float* x, const float* dy, float* dx, std::size_t n) {
  GRID_STRIDE(i, n) {
    const float v = x[i];
    const float cdf = 0.5f * (1.f + erff(v * 0.70710678118654752f));
    const float pdf = 0.39894228040143268f * expf(-0.5f * v * v);
    dx[i] = dy[i] * (cdf + v * pdf);
  }
}

__global__ void softmax_forward_kernel(const float* x, float* y, int rows, int cols) {
  const int row = warp_row(rows), lane = threadIdx.x % 32;
  if (row < 0) return;
  const float* xr = x + std::size_t(row) * cols;
  float* yr = y + std::size_t(row) * cols;
  float top = -INFINITY;
  for (int j = lane; j < cols; j += 32) top = fmaxf(top, xr[j]);
  top = warp_all_max(top);
  float sum = 0.f;
  for (int j = lane; j < cols; j += 32) {
    const float e = expf(xr[j] - top);
    yr[j] = e;
    sum += e;
  }
  const float inv = 1.f / warp_all_sum(sum);
  for (int j = lane; j < cols; j += 32) yr[j] *= inv;
}

__global__ void softmax_backward_kernel(const float* y, const float* dy, float* dx, int rows, int cols) {
  const int row = warp_row(rows), lane = threadIdx.x % 32;
  if (row < 0) return;
  const float* yr = y + std::size_t(row) * cols;
  const float* dyr = dy + std::size_t(row) * cols;
  float dot = 0.f;
  for (int j = lane; j < cols; j += 32) dot += dyr[j] * yr[j];
  dot = warp_all_sum(dot);
  float* dxr = dx + std::size_t(row) * cols;
  for (int j = lane; j < cols; j += 32) dxr[j] = yr[j] * (dyr[j] - dot);
}

__global__ void add_row_bias_kernel(float* x, const float* bias, int width, std::size_t n) {
  GRID_STRIDE(i, n) x[i] += bias[i % width];
}
__global__ void scale_columns_kernel(const float* x, const float* gamma, float* y, int width, std::size_t n) {
  GRID_STRIDE(i, n) y[i] = x[i] * gamma[i % width];
}
__global__ void add_kernel(const float* a, const float* b, float* y, std::size_t n) {
  GRID_STRIDE(i, n) y[i] = a[i] + b[i];
}

// One thread per output element; consecutive threads write consecutive rows of the
// output (r fastest), which reads `in` with stride in_ld: the tensors are small
// (the features of one step), so no shared-memory tiling.
__global__ void transpose_kernel(const float* in, long long in_ld, long long in_stride, float* out,
                                 long long out_stride, int rows, int cols, std::size_t n) {
  GRID_STRIDE(o, n) {
    const std::size_t r = o % rows, c = (o / rows) % cols, i = o / (std::size_t(rows) * cols);
    out[i * out_stride + c * rows + r] = in[i * in_stride + r * in_ld + c];
  }
}

__global__ void patchify_kernel(const float* images, float* patches, int channels, int height, int width, int patch,
                                std::size_t n) {
  GRID_STRIDE(o, n) {
    const int row = channels * patch * patch, pw = width / patch, ph = height / patch;
    const int within = int(o % row);
    const std::size_t token = o / row;
    const int px = int(token % pw), py = int((token / pw) % ph);
    const std::size_t b = token / (std::size_t(pw) * ph);
    const int kx = within % patch, ky = (within / patch) % patch, c = within / (patch * patch);
    patches[o] = images[((b * channels + c) * height + std::size_t(py) * patch + ky) * width + std::size_t(px) * patch + kx];
  }
}

// One thread per float of the destination; a row's floats are consecutive threads,
// so both sides are read and written in whole rows.
__global__ void window_partition_kernel(const float* tokens, float* windows, const float* fill,
                                        compute::WindowGrid g, int width, std::size_t n) {
  GRID_STRIDE(o, n) {
    const long long t = g.token_of((long long)(o / width));
    const std::size_t c = o % width;
    windows[o] = t >= 0 ? tokens[std::size_t(t) * width + c] : fill != nullptr ? fill[c] : 0.f;
  }
}
__global__ void window_unpartition_kernel(const float* windows, float* tokens, compute::WindowGrid g, int width,
                                          std::size_t n) {
  GRID_STRIDE(o, n) tokens[o] = windows[std::size_t(g.window_of((long long)(o / width))) * width + o % width];
}

// One thread per element written: a row's elements are consecutive threads.
__global__ void conv_patches_kernel(const float* images, float* patches, compute::ConvPatchGrid g, std::size_t n) {
  const int cols = g.row_width();
  GRID_STRIDE(o, n) {
    const long long src = g.source_of((long long)(o / cols), int(o % cols));
    patches[o] = src >= 0 ? images[src] : 0.f;
  }
}
__global__ void max_pool_forward_kernel(const float* x, float* y, compute::TokenPoolGrid g, int width,
                                        std::size_t n) {
  GRID_STRIDE(o, n) {
    const long long row = (long long)(o / width);
    const std::size_t c = o % width;
    float v[4];
    for (int t = 0; t < 4; ++t) v[t] = x[std::size_t(g.input_of(row, t)) * width + c];
    y[o] = v[compute::max_tap(v)];
  }
}
__global__ void max_pool_backward_kernel(const float* x, const float* dy, float* dx, compute::TokenPoolGrid g,
                                         int width, std::size_t n) {
  GRID_STRIDE(i, n) {
    int tap = -1;
    const long long row = g.output_of((long long)(i / width), tap);
    const std::size_t c = i % width;
    float grad = 0.f;
    if (row >= 0) {
      float v[4];
      for (int t = 0; t < 4; ++t) v[t] = x[std::size_t(g.input_of(row, t)) * width + c];
      if (compute::max_tap(v) == tap) grad = dy[std::size_t(row) * width + c];
    }
    dx[i] = grad;
  }
}

}  // namespace

void transpose(const float* in, long long in_ld, long long in_stride, float* out, long long out_stride, int batch,
               int rows, int cols, cudaStream_t stream) {
  const std::size_t n = std::size_t(batch) * rows * cols;
  if (n == 0) return;
  transpose_kernel<<<blocks_for(n), kThreads, 0, stream>>>(in, in_ld, in_stride, out, out_stride, rows, cols, n);
}

void patchify(const float* images, float* patches, int batch, int channels, int height, int width, int patch,
              cudaStream_t stream) {
  const std::size_t n = std::size_t(batch) * (height / patch) * (width / patch) * channels * patch * patch;
  if (n == 0) return;
  patchify_kernel<<<blocks_for(n), kThreads, 0, stream>>>(images, patches, channels, height, width, patch, n);
}

void window_partition(const float* tokens, float* windows, const float* fill, const compute::WindowGrid& g,
                      int width, cudaStream_t stream) {
  const std::size_t n = std::size_t(g.window_rows()) * width;
  if (n == 0) return;
  window_partition_kernel<<<blocks_for(n), kThreads, 0, stream>>>(tokens, windows, fill, g, width, n);
}

void window_unpartition(const float* windows, float* tokens, const compute::WindowGrid& g, int width,
                        cudaStream_t stream) {
  const std::size_t n = std::size_t(g.token_rows()) * width;
  if (n == 0) return;
  window_unpartition_kernel<<<blocks_for(n), kThreads, 0, stream>>>(windows, tokens, g, width, n);
}

void conv_patches(const float* images, float* patches, const compute::ConvPatchGrid& g, cudaStream_t stream) {
  const std::size_t n = std::size_t(g.rows()) * g.row_width();
  if (n == 0) return;
  conv_patches_kernel<<<blocks_for(n), kThreads, 0, stream>>>(images, patches, g, n);
}

void max_pool_forward(const float* x, float* y, const compute::TokenPoolGrid& g, int width, cudaStream_t stream) {
  const std::size_t n = std::size_t(g.out_rows()) * width;
  if (n == 0) return;
  max_pool_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, g, width, n);
}

void max_pool_backward(const float* x, const float* dy, float* dx, const compute::TokenPoolGrid& g, int width,
                       cudaStream_t stream) {
  const std::size_t n = std::size_t(g.in_rows()) * width;
  if (n == 0) return;
  max_pool_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, dy, dx, g, width, n);
}

void layer_norm_forward(const float* x, const float* gamma, const float* beta, float* y, std::uint16_t* y16,
                        Format16 f, float* mean, float* rstd, int rows, int width, float eps, cudaStream_t stream) {
  if (rows <= 0) return;
  layer_norm_forward_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(x, gamma, beta, y, y16, f, mean, rstd, rows,
                                                                       width, eps);
}

void layer_norm_backward_input(const float* x, const float* gamma, const float* mean, const float* rstd,
                               const float* dy, float* dx, int rows, int width, cudaStream_t stream) {
  if (rows <= 0) return;
  layer_norm_backward_input_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(x, gamma, mean, rstd, dy, dx, rows,
                                                                              width);
}

int column_reduce_chunks(int rows) {
  // About 256 rows (8 per row lane) a chunk, at most 64 chunks: a ViT-S batch of 16
  // (4,112 token rows) gets 17 chunks of 12 column blocks.
  const int chunks = (rows + 255) / 256;
  return chunks < 1 ? 1 : chunks > 64 ? 64 : chunks;
}

std::size_t column_reduce_scratch_bytes(int rows, int width) {
  const int chunks = column_reduce_chunks(rows);
  return chunks > 1 ? std::size_t(chunks) * std::size_t(width) * sizeof(double) : 0;
}

void layer_norm_backward_params(const float* x, const float* mean, const float* rstd, const float* dy, float* dgamma,
                                float* dbeta, double* partials, int rows, int width, cudaStream_t stream) {
  if (rows <= 0) {  // the empty sums
    column_sums(dy, nullptr, dgamma, nullptr, rows, width, stream);
    column_sums(dy, nullptr, dbeta, nullptr, rows, width, stream);
    return;
  }
  const ColumnLaunch l = column_launch(rows, width);
  layer_norm_dgamma_kernel<<<l.grid, kColumnBlock, 0, stream>>>(x, mean, rstd, dy, dgamma, partials, rows, width,
                                                                l.rows_per_chunk);
  finish_columns(partials, rows, width, dgamma, stream);
  column_sums_kernel<<<l.grid, kColumnBlock, 0, stream>>>(dy, nullptr, dbeta, partials, rows, width, l.rows_per_chunk);
  finish_columns(partials, rows, width, dbeta, stream);
}

void gelu_forward(const float* x, float* y, std::uint16_t* y16, Format16 f, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  gelu_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, y16, f, n);
}

void gelu_backward(const float* x, const float* dy, float* dx, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  gelu_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, dy, dx, n);
}

void softmax_forward(const float* x, float* y, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0) return;
  softmax_forward_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(x, y, rows, cols);
}

void softmax_backward(const float* y, const float* dy, float* dx, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0) return;
  softmax_backward_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(y, dy, dx, rows, cols);
}

void add_row_bias(float* x, const float* bias, int rows, int width, cudaStream_t stream) {
  const std::size_t n = std::size_t(rows) * width;
  if (n == 0) return;
  add_row_bias_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, bias, width, n);
}

void column_sums(const float* a, const float* b, float* out, double* partials, int rows, int width,
                 cudaStream_t stream) {
  if (width <= 0) return;
  if (rows <= 0) {
    cudaMemsetAsync(out, 0, std::size_t(width) * sizeof(float), stream);  // the empty sum (checked by the caller)
    return;
  }
  const ColumnLaunch l = column_launch(rows, width);
  column_sums_kernel<<<l.grid, kColumnBlock, 0, stream>>>(a, b, out, partials, rows, width, l.rows_per_chunk);
  finish_columns(partials, rows, width, out, stream);
}

void scale_columns(const float* x, const float* gamma, float* y, int rows, int width, cudaStream_t stream) {
  const std::size_t n = std::size_t(rows) * width;
  if (n == 0) return;
  scale_columns_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, gamma, y, width, n);
}

void add(const float* a, const float* b, float* y, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(a, b, y, n);
}

}  // namespace trainer::kernels
