#pragma once
// The index rules of SAM2's Hiera backbone (transformers' Sam2HieraDetModel), written
// once for the CPU loops (cpu_transformer_ops.cpp) and the CUDA kernels
// (kernels/transformer.cu), so both read and write the same elements.
//
// TokenPoolGrid: max_pool2d(kernel 2, stride 2, floor) over tokens [batch, height,
// width, channels] in raster order (Hiera's do_pool of its queries and of the
// stage-changing residual). Output row ((b * out_h + oy) * out_w + ox) takes the max
// of input rows (2 oy + ty, 2 ox + tx), taps t = 2 ty + tx in that order; as PyTorch's
// kernel, a later tap wins only when it is greater (or NaN), so on ties the first tap
// holds the max and receives the gradient.
//
// ConvPatchGrid: the input patches of a Conv2d (kernel k, stride s, zero padding p)
// over images [batch, channels, height, width] as rows: row ((b * out_h + oy) * out_w
// + ox), column (c * k + ky) * k + kx holds image (c, oy * s - p + ky, ox * s - p + kx),
// or 0 outside the image; the convolution is then a Linear with its [out, c, k, k]
// weight read as [out, c * k * k] (Hiera's 7x7, stride-4 patch embedding).
#include "compute/host_device.hpp"  // TRAINER_HOST_DEVICE

namespace trainer::compute {

struct TokenPoolGrid {
  int batch = 0, height = 0, width = 0;
  TRAINER_HOST_DEVICE int out_h() const { return height / 2; }
  TRAINER_HOST_DEVICE int out_w() const { return width / 2; }
  TRAINER_HOST_DEVICE long long in_rows() const { return (long long)batch * height * width; }
  TRAINER_HOST_DEVICE long long out_rows() const { return (long long)batch * out_h() * out_w(); }
  // The input row of tap t (0..3) of output row o.
  TRAINER_HOST_DEVICE long long input_of(long long o, int t) const {
    const int ox = int(o % out_w()), oy = int((o / out_w()) % out_h());
    const long long b = o / ((long long)out_w() * out_h());
    return (b * height + 2 * oy + t / 2) * width + 2 * ox + t % 2;
  }
  // The output row input row i is a tap of, and which tap (-1: none; the last row or
  // column of an odd extent, which floor pooling drops).
  TRAINER_HOST_DEVICE long long output_of(long long i, int& tap) const {
    const int x = int(i % width), y = int((i / width) % height);
    const long long b = i / ((long long)width * height);
    if (y / 2 >= out_h() || x / 2 >= out_w()) {
      tap = -1;
      return -1;
    }
    tap = 2 * (y % 2) + x % 2;
    return (b * out_h() + y / 2) * out_w() + x / 2;
  }
};

// The tap (0..3) of values v[0..3] that holds their max, as PyTorch's max_pool2d picks it.
TRAINER_HOST_DEVICE inline int max_tap(const float* v) {
  int best = 0;
  for (int t = 1; t < 4; ++t)
    if (v[t] > v[best] || v[t] != v[t]) best = t;
  return best;
}

struct ConvPatchGrid {
  int batch = 0, channels = 0, height = 0, width = 0, kernel = 0, stride = 1, pad = 0;
  TRAINER_HOST_DEVICE int out_h() const { return (height + 2 * pad - kernel) / stride + 1; }
  TRAINER_HOST_DEVICE int out_w() const { return (width + 2 * pad - kernel) / stride + 1; }
  TRAINER_HOST_DEVICE int row_width() const { return channels * kernel * kernel; }
  TRAINER_HOST_DEVICE long long rows() const { return (long long)batch * out_h() * out_w(); }
  // The image element that patch row r, column c holds, or -1 for the zero padding.
  TRAINER_HOST_DEVICE long long source_of(long long r, int c) const {
    const int ox = int(r % out_w()), oy = int((r / out_w()) % out_h());
    const long long b = r / ((long long)out_w() * out_h());
    const int kx = c % kernel, ky = (c / kernel) % kernel, ch = c / (kernel * kernel);
    const int y = oy * stride - pad + ky, x = ox * stride - pad + kx;
    if (y < 0 || y >= height || x < 0 || x >= width) return -1;
    return ((b * channels + ch) * height + y) * width + x;
  }
};

}  // namespace trainer::compute
