#pragma once
// Per-frame geometry and photometry: resize to the network input, optional
// "dlc"-style augmentation (lightning-pose's training.imgaug = dlc), and the
// conversion to normalized float planes.
//
// Coordinates are continuous pixel coordinates: pixel i covers [i, i + 1), so a
// plain resize maps x to x * (W_out / W_in), exactly as lightning-pose scales
// keypoints. The image is warped with the same affine map (half-pixel centres),
// so a keypoint transformed here lands on the same image content.
#include <cstdint>  // std::uint8_t, std::uint64_t, std::int64_t
#include <string>   // std::string
#include <vector>   // std::vector

#include "data/augment_pixels.hpp"  // PixelAugment (the image-space dlc steps)

namespace trainer::data {

// lightning-pose's imgaug presets (lightning_pose/data/augmentations.py):
//   kNone        "default" / "none": resize only
//   kDlc         "dlc": the DeepLabCut-style pipeline below
//   kDlcLr       "dlc-lr": a rotation by 0 or 180 degrees (uniform), then dlc
//   kDlcTopDown  "dlc-top-down": a rotation by 0, 90, 180 or 270 degrees, then dlc
// The quarter turns are imgaug's Rot90 with keep_size: the frame is turned and
// stretched back to its own size (a 90-degree turn of a non-square frame scales it).
enum class Augmentation { kNone, kDlc, kDlcLr, kDlcTopDown };

// The names of training.imgaug, in the order help and docs list them:
// "default", "none", "dlc", "dlc-lr", "dlc-top-down".
const std::vector<std::string>& imgaug_names();
// One of imgaug_names(); anything else is a UserError listing them.
Augmentation parse_imgaug(const std::string& name);

// ImageNet statistics used for the network input: x = (v / 255 - mean[c]) / std[c].
inline constexpr float kImageNetMean[3] = {0.485f, 0.456f, 0.406f};
inline constexpr float kImageNetStd[3] = {0.229f, 0.224f, 0.225f};

struct FrameTransform {
  // Source → network input: x' = m[0] x + m[1] y + m[2], y' = m[3] x + m[4] y + m[5].
  double m[6] = {1, 0, 0, 0, 1, 0};
  float contrast = 1.0f;    // v' = contrast * (v - 128) + 128 + brightness, clamped to [0, 255]
  float brightness = 0.0f;
  // Image-space steps applied after the warp (see augment_pixels.hpp); all off
  // unless dlc.
  PixelAugment pixels;
  // lightning-pose's imgaug_hflip: the frame was mirrored (x -> W - x, folded into m),
  // so keypoint i must take the place of its _left/_right partner (hflip_partners).
  bool flipped = false;
};

// lightning-pose's imgaug_hflip pairs: entry i is the keypoint whose coordinates land
// at i after a horizontal flip: a name ending in _left and the same name ending in
// _right swap, every other keypoint stays. A _left without its _right (or the other
// way round) is a UserError naming them.
std::vector<int> hflip_partners(const std::vector<std::string>& keypoint_names);

// The dlc draws (all from a stream keyed by seed, epoch and frame index), as
// lightning-pose's dlc pipeline on the frame as stored, then its resize:
//   rotation   p = 0.4, uniform in [-25, 25] degrees about the frame's centre (Affine)
//   crop / pad p = 0.4, each side uniform in [-15 %, 15 %] of the frame's height or
//              width, > 0 padding with black, < 0 cropping (CropAndPad, keep_size =
//              False); the result is resized to the network's input, so this scales
//              each axis by 0.77 - 1.43 and shifts it
// then, from the same stream, the image-space steps (draw_pixel_augment), and last
// (so that dlc's own draws stay what they are) the quarter turns of dlc-lr and
// dlc-top-down, applied before everything else (Rot90).
// With `hflip` (lightning-pose's imgaug_hflip, training only), last of all and with
// probability 0.5 (from a stream of its own), the result is mirrored in the network
// input: x -> dst_w - x.
FrameTransform make_transform(int src_h, int src_w, int dst_h, int dst_w, Augmentation aug, std::uint64_t seed,
                              int epoch, std::int64_t frame, bool hflip = false);

// Applies the geometry to K (x, y) pairs; a keypoint outside [0, W) x [0, H) of the
// output, or NaN on input, becomes NaN.
void transform_keypoints(const FrameTransform& t, const float* in, float* out, int num_keypoints, int dst_h,
                         int dst_w);

// Whether t only scales the h x w frame onto the dst_h x dst_w output (no rotation,
// crop, pad, turn or flip).
bool is_plain_resize(const FrameTransform& t, int h, int w, int dst_h, int dst_w);

// Warps a H*W*C uint8 image (C = 1 or 3) into dst (dst_h*dst_w*C): a plain resize as
// imgaug's Resize does it (OpenCV's bicubic cv::resize), anything else in one bilinear
// warp with a black border.
void warp_image(const FrameTransform& t, const std::uint8_t* src, int h, int w, int c, std::uint8_t* dst, int dst_h,
                int dst_w);
// The same on H*W*C floats (video frames, which lightning-pose's DALI pipeline keeps as floats).
void warp_image(const FrameTransform& t, const float* src, int h, int w, int c, float* dst, int dst_h, int dst_w);

// Writes 3 float planes [3, h, w] (grayscale replicated), brightness/contrast then
// ImageNet normalization, through a 256-entry table per channel.
void normalize_to_planes(const FrameTransform& t, const std::uint8_t* img, int h, int w, int c, float* out);

}  // namespace trainer::data
