#include "data/video_frame_input.hpp"

#include <cstddef>  // std::size_t

#include "data/augment.hpp"  // kImageNetMean, kImageNetStd, warp_image

namespace trainer::data {

namespace {
// x = (v / 255 - mean[ch]) / std[ch] for h x w x c floats v into 3 planes (a gray frame replicated).
void normalize_float_to_planes(const float* hwc, int h, int w, int c, float* out) {
  const std::size_t plane = static_cast<std::size_t>(h) * w;
  for (int ch = 0; ch < 3; ++ch) {
    const float scale = 1.0f / (255.0f * kImageNetStd[ch]);
    const float shift = -kImageNetMean[ch] / kImageNetStd[ch];
    const float* src = hwc + (c == 1 ? 0 : ch);
    float* dst = out + static_cast<std::size_t>(ch) * plane;
    for (std::size_t i = 0; i < plane; ++i) dst[i] = src[i * static_cast<std::size_t>(c)] * scale + shift;
  }
}
}  // namespace

void VideoFrameInput::plain(const std::uint8_t* frame, int h, int w, int c, int out_h, int out_w, float* out) {
  normalize_float_to_planes(resize_.run(frame, h, w, c, out_h, out_w), out_h, out_w, c, out);
}

void VideoFrameInput::augmented(const std::uint8_t* frame, int h, int w, int c, int out_h, int out_w,
                                const UnlabeledAugment& a, std::uint64_t seed, int epoch, long step, long noise_key,
                                float* out) {
  const float* resized = resize_.run(frame, h, w, c, out_h, out_w);
  const std::size_t values = static_cast<std::size_t>(out_h) * out_w * c;
  warped_.resize(values);
  warp_image(a.on_resized, resized, out_h, out_w, c, warped_.data(), out_h, out_w);
  apply_unlabeled_photometrics(a, warped_.data(), values, seed, epoch, step, noise_key);
  normalize_float_to_planes(warped_.data(), out_h, out_w, c, out);
}

}  // namespace trainer::data
