#pragma once
// A decoded video frame -> the network input, as lightning-pose's DALI pipeline
// makes it (lightning_pose/data/video/dali.py, video_pipe): the frame as floats
// 0..255, resized by fn.resize (data/video_resize.hpp: linear, antialiased), for
// unlabelled frames under dlc or dlc-top-down then warped, brightened and noised
// (data/unlabeled_augment.hpp), then / 255 and ImageNet's normalization into 3 planes
// [3, out_h, out_w] (a grayscale frame replicated). `trainer predict` on videos and
// the unlabelled batches of semi-supervised training read frames through this;
// labelled frames go through imgaug's pipeline instead (data/augment.hpp).
//
// One per worker thread: it keeps the resize's taps and its buffers between frames.
#include <cstdint>  // std::uint8_t, std::uint64_t
#include <vector>

#include "data/unlabeled_augment.hpp"  // UnlabeledAugment
#include "data/video_resize.hpp"       // VideoResize

namespace trainer::data {

class VideoFrameInput {
 public:
  // An h x w frame of c = 1 or 3 interleaved channels (RGB) into out (3 * out_h * out_w floats).
  void plain(const std::uint8_t* frame, int h, int w, int c, int out_h, int out_w, float* out);

  // With the unlabelled frames' augmentation `a`; the shot noise is keyed by
  // (seed, epoch, step, noise_key).
  void augmented(const std::uint8_t* frame, int h, int w, int c, int out_h, int out_w, const UnlabeledAugment& a,
                 std::uint64_t seed, int epoch, long step, long noise_key, float* out);

 private:
  VideoResize resize_;
  std::vector<float> warped_;
};

}  // namespace trainer::data
