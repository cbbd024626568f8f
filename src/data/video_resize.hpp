#pragma once
// The resize lightning-pose gives video frames: DALI's `fn.resize(video, size=...)`
// with its defaults (linear, antialiased) on the float frames its video reader
// returns. It is separable; along each axis an output pixel x reads the source at
// s = (x + 0.5) * in / out - 0.5 (pixel-index units) through a triangle of half-width
// r = max(1, in / out): weight max(0, 1 - |j - s| / r) for source pixel j, the
// weights normalized to sum to 1, taps past the edge reading the edge pixel. When
// enlarging that is plain bilinear; when shrinking every source pixel under the
// output pixel counts, where a bilinear warp reads only the two nearest (at a
// 1280 x 1024 camera -> 256 x 256, 2 of the 5 columns and rows each output covers).
// The result stays float, as in DALI: no rounding to 8 bits.
//
// Labelled frames are resized differently, as lightning-pose's imgaug pipeline does
// (data/augment.hpp).
#include <cstdint>  // std::uint8_t
#include <vector>

namespace trainer::data {

class VideoResize {
 public:
  // Resizes one h x w frame of c interleaved uint8 channels into out_h x out_w x c
  // floats (0..255) and returns them; they stay valid until the next call. The taps
  // are planned once per frame and output size and reused while those stay.
  const float* run(const std::uint8_t* frame, int h, int w, int c, int out_h, int out_w);

  // One axis's taps: output pixel i reads source pixels index[i * support + k]
  // (clamped to the frame) with weights weight[i * support + k], k < support.
  struct AxisTaps {
    int in = 0, out = 0, support = 0;
    std::vector<int> index;
    std::vector<float> weight;
  };
  static AxisTaps plan_axis(int in, int out);

 private:
  AxisTaps rows_, cols_;
  std::vector<float> vertical_;  // out_h x (w * c): the rows pass, then the columns
  std::vector<float> result_;    // out_h x out_w x c
};

}  // namespace trainer::data
