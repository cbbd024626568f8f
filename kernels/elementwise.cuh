#pragma once
// Elementwise kernels: fill, scale, accumulate, ReLU forward/backward, the fused
// residual add + ReLU, and per-channel bias add / bias gradient for transposed
// convolutions. CPU twins: the same Backend ops in src/compute/cpu/.
// Launchers only enqueue work on `stream`; they never synchronize.
#include <cuda_runtime_api.h>  // cudaStream_t
#include <cstddef>             // std::size_t

namespace trainer::kernels {

void fill(float* dst, float value, std::size_t n, cudaStream_t stream);
// dst[i] = v.values[i] for i < v.count: host scalars carried by the launch itself, so
// the host may change its copy at once and a recorded graph keeps these values.
struct SmallValues {
  float values[16];
  int count;
};
void set_values(float* dst, const SmallValues& v, cudaStream_t stream);
void scale(float* x, float alpha, std::size_t n, cudaStream_t stream);
// x[i] *= factor[0], read from device memory when the kernel runs.
void scale_by(float* x, const float* factor, std::size_t n, cudaStream_t stream);
void accumulate(const float* x, float* out, std::size_t n, cudaStream_t stream);  // out += x
// `points` (x, y) pairs mapped in place by the AffineMap2D coefficients at `map`
// (6 floats of device memory, compute/affine_points.hpp).
void affine_points(float* xy, std::size_t points, const float* map, cudaStream_t stream);
void relu_forward(const float* x, float* y, std::size_t n, cudaStream_t stream);
// dx = dy where y > 0, else 0; dx may alias dy.
void relu_backward(const float* y, const float* dy, float* dx, std::size_t n, cudaStream_t stream);
void add_relu_forward(const float* a, const float* b, float* y, std::size_t n, cudaStream_t stream);
// y[n, c, :, :] += bias[c] for an NCHW tensor.
void add_channel_bias(float* y, const float* bias, int n, int c, int plane, cudaStream_t stream);

}  // namespace trainer::kernels
