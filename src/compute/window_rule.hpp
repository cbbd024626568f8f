#pragma once
// Which token each row of a windowed-attention layout holds (SAM's window_partition
// and window_unpartition), written once for the CPU loops (cpu_transformer_ops.cpp)
// and the CUDA kernels (kernels/transformer.cu), so both move the same rows.
//
// Tokens [batch, height, width, channels] (a ViT's rows in raster order) are padded
// at the bottom and right with zero tokens to multiples of `window`, then cut into
// window x window squares: windows row ((b * windows_h + wy) * windows_w + wx) *
// window^2 + iy * window + ix holds token (wy * window + iy, wx * window + ix) of
// image b, or a zero token when that lies in the padding.
#include "compute/host_device.hpp"  // TRAINER_HOST_DEVICE

namespace trainer::compute {

struct WindowGrid {
  int batch = 0, height = 0, width = 0, window = 0;
  TRAINER_HOST_DEVICE int windows_h() const { return (height + window - 1) / window; }
  TRAINER_HOST_DEVICE int windows_w() const { return (width + window - 1) / window; }
  // The windowed layout's rows (padding included) and the tokens' rows.
  TRAINER_HOST_DEVICE long long window_rows() const {
    return (long long)batch * windows_h() * windows_w() * window * window;
  }
  TRAINER_HOST_DEVICE long long token_rows() const { return (long long)batch * height * width; }

  // The token row a windowed row holds, or -1 for a padding row.
  TRAINER_HOST_DEVICE long long token_of(long long window_row) const {
    const long long area = (long long)window * window;
    const int within = int(window_row % area);
    const long long w = window_row / area;
    const int wx = int(w % windows_w()), wy = int((w / windows_w()) % windows_h());
    const long long b = w / ((long long)windows_w() * windows_h());
    const int y = wy * window + within / window, x = wx * window + within % window;
    if (y >= height || x >= width) return -1;
    return (b * height + y) * width + x;
  }
  // The windowed row that holds token row `token_row`.
  TRAINER_HOST_DEVICE long long window_of(long long token_row) const {
    const int x = int(token_row % width), y = int((token_row / width) % height);
    const long long b = token_row / ((long long)width * height);
    const long long w = (b * windows_h() + y / window) * windows_w() + x / window;
    return w * window * window + (long long)(y % window) * window + x % window;
  }
};

}  // namespace trainer::compute
