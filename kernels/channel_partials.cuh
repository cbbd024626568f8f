#pragma once
// The second pass of the kernels' per-channel sums (batchnorm.cu over NCHW fp32,
// nhwc16.cu over NHWC 16-bit): `splits` double partials per channel, laid out
// partial[(split * c + ch) * 2 + {0, 1}], added in split order (deterministic) into
// out[ch] and out[c + ch]. Included by .cu files only.
#include <cstddef>  // std::size_t

namespace trainer::kernels {
namespace {

__global__ void channel_partials_sum_kernel(const double* partial, int c, int splits, float* out) {
  const int ch = blockIdx.x * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  double a = 0.0, b = 0.0;
  for (int s = 0; s < splits; ++s) {
    a += partial[(std::size_t(s) * c + ch) * 2 + 0];
    b += partial[(std::size_t(s) * c + ch) * 2 + 1];
  }
  out[ch] = static_cast<float>(a);
  out[c + ch] = static_cast<float>(b);
}

}  // namespace
}  // namespace trainer::kernels
