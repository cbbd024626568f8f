#pragma once
// lightning-pose's augmentation of unlabelled video frames: its DALI video_pipe with
// `imgaug: dlc` or `dlc-top-down` draws, per sequence,
//   a rotation uniform in [-10, 10] degrees, then a scale uniform in [0.8, 1.2] per
//   axis, both about the centre of the resized frame (fn.warp_affine, black border);
//   brightness and contrast uniform in [0.75, 1.25] (fn.brightness_contrast on
//   0..255 floats, whose contrast centre is then 0.5: v' = b (0.5 + c (v - 0.5)));
//   shot noise with a factor uniform in [0, 10] (fn.noise.shot: Poisson(v / f) f);
// all on the float frames of its video reader, after fn.resize
// (data/video_frame_input.hpp), and without clamping;
// and maps the keypoints predicted on the augmented frames back before the losses
// (undo_affine_transform_batch). Here the draws are keyed by (seed, epoch, step)
// and not by rank, so every rank's share of a sequence gets the same transform, as
// one GPU's sequence does (lightning-pose draws per GPU), and 2 ranks train what 1
// does. Shot noise is Poisson's normal approximation (mean v, variance v f), from a
// fast sum of uniforms.
#include <cstdint>  // std::uint64_t
#include <cstddef>  // std::size_t

#include "data/augment.hpp"  // Augmentation, FrameTransform

namespace trainer::data {

struct UnlabeledAugment {
  FrameTransform on_resized;  // the resized frame -> the network input: the rotation and scale (network pixels)
  float gain = 1.f;          // v' = gain * v + offset (brightness and contrast)
  float offset = 0.f;
  double shot_noise = 0.0;  // 0: none
  // Network-input pixels of the augmented frame -> those of the un-augmented one:
  // x' = m[0] x + m[1] y + m[2], y' = m[3] x + m[4] y + m[5].
  float unwarp[6] = {1, 0, 0, 0, 1, 0};
};

// Whether lightning-pose augments unlabelled frames for this imgaug (dlc, dlc-top-down).
bool augments_unlabeled_frames(Augmentation imgaug);

// `dst_h` x `dst_w`: the network input, the size of the resized frame.
UnlabeledAugment draw_unlabeled_augment(int dst_h, int dst_w, std::uint64_t seed, int epoch, long step);

// The photometric steps on a warped image of n float values (0..255), in place:
// brightness and contrast, then shot noise from a stream keyed by (seed, epoch, step,
// frame).
void apply_unlabeled_photometrics(const UnlabeledAugment& a, float* image, std::size_t n, std::uint64_t seed,
                                  int epoch, long step, long frame);

}  // namespace trainer::data
