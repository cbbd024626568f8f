#pragma once
// Image-layout kernels: uint8 NHWC frames -> normalized float NCHW (grayscale
// replicated to 3 channels), and PixelShuffle forward/backward (PyTorch layout:
// y[n, c, h*r + i, w*r + j] = x[n, c*r*r + i*r + j, h, w]).
// CPU twins: normalize_images and pixel_shuffle_* in src/compute/cpu/.
#include <cuda_runtime_api.h>  // cudaStream_t
#include <cstdint>             // std::uint8_t

namespace trainer::kernels {

struct Normalization {
  float mean[3];
  float std[3];
};

// src: device memory, [n, h, w, in_channels]; dst: [n, 3, h, w].
void normalize_images(const std::uint8_t* src, int in_channels, float* dst, int n, int h, int w,
                      const Normalization& norm, cudaStream_t stream);

// x: [n, c*r*r, h, w] -> y: [n, c, h*r, w*r]
void pixel_shuffle_forward(const float* x, float* y, int n, int c_out, int h, int w, int r,
                           cudaStream_t stream);
// dy: [n, c, h*r, w*r] -> dx: [n, c*r*r, h, w]
void pixel_shuffle_backward(const float* dy, float* dx, int n, int c_out, int h, int w, int r,
                            cudaStream_t stream);

}  // namespace trainer::kernels
