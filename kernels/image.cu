// Image-layout kernels; see image.cuh.
#include "image.cuh"

#include <cstddef>  // std::size_t

#include "launch.cuh"  // blocks_for, kThreads

namespace trainer::kernels {
namespace {

using detail::blocks_for;
using detail::kThreads;

// One thread per output element (n, c, y, x) so writes are coalesced.
__global__ void normalize_kernel(const std::uint8_t* src, int in_channels, float* dst, int h, int w,
                                 Normalization norm, std::size_t total) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(blockDim.x) * gridDim.x) {
    const std::size_t pixel = i % (std::size_t(h) * w);
    const int c = static_cast<int>((i / (std::size_t(h) * w)) % 3);
    const std::size_t n = i / (std::size_t(h) * w * 3);
    const int src_c = in_channels == 1 ? 0 : c;
    const float v = static_cast<float>(src[(n * h * w + pixel) * in_channels + src_c]);
    dst[i] = (v / 255.f - norm.mean[c]) * (1.f / norm.std[c]);  // as the CPU twin
  }
}

// Index of y element i ([n, c, H, W] with H = h*r, W = w*r) in x.
__device__ inline std::size_t shuffle_source(std::size_t i, int c_out, int h, int w, int r) {
  const int W = w * r, H = h * r;
  const int X = static_cast<int>(i % W);
  const int Y = static_cast<int>((i / W) % H);
  const std::size_t nc = i / (std::size_t(W) * H);
  const int c = static_cast<int>(nc % c_out);
  const std::size_t n = nc / c_out;
  const int in_c = c * r * r + (Y % r) * r + (X % r);
  return ((n * c_out * r * r + in_c) * h + Y / r) * w + X / r;
}

__global__ void shuffle_forward_kernel(const float* x, float* y, int c_out, int h, int w, int r,
                                       std::size_t total) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(blockDim.x) * gridDim.x)
    y[i] = x[shuffle_source(i, c_out, h, w, r)];
}

__global__ void shuffle_backward_kernel(const float* dy, float* dx, int c_out, int h, int w, int r,
                                        std::size_t total) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(blockDim.x) * gridDim.x)
    dx[shuffle_source(i, c_out, h, w, r)] = dy[i];
}

}  // namespace

void normalize_images(const std::uint8_t* src, int in_channels, float* dst, int n, int h, int w,
                      const Normalization& norm, cudaStream_t s) {
  const std::size_t total = std::size_t(n) * 3 * h * w;
  if (total)
    normalize_kernel<<<blocks_for(total), kThreads, 0, s>>>(src, in_channels, dst, h, w, norm,
                                                            total);
}

void pixel_shuffle_forward(const float* x, float* y, int n, int c_out, int h, int w, int r,
                           cudaStream_t s) {
  const std::size_t total = std::size_t(n) * c_out * h * r * w * r;
  if (total) shuffle_forward_kernel<<<blocks_for(total), kThreads, 0, s>>>(x, y, c_out, h, w, r, total);
}

void pixel_shuffle_backward(const float* dy, float* dx, int n, int c_out, int h, int w, int r,
                            cudaStream_t s) {
  const std::size_t total = std::size_t(n) * c_out * h * r * w * r;
  if (total)
    shuffle_backward_kernel<<<blocks_for(total), kThreads, 0, s>>>(dy, dx, c_out, h, w, r, total);
}

}  // namespace trainer::kernels
