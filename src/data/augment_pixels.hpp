#pragma once
// The image-space part of lightning-pose's `dlc` pipeline (imgaug augmenters),
// applied to uint8 H*W*C images (C = 1 or 3) at network size, after the affine warp
// and before normalization, with imgaug's pixel sizes (given in the stored frame's
// pixels, where lightning-pose runs them) scaled to the network's
// (PixelAugment::stored_scale_*):
//   MotionBlur, CoarseDropout, CoarseSalt, CoarsePepper, ElasticTransformation,
//   AllChannelsHistogramEqualization, AllChannelsCLAHE, Emboss (in that order).
//
// PixelAugment holds every random choice for one frame, drawn once from the frame's
// keyed stream; the per-pixel randomness (masks, noise fields) comes from seeds
// stored in it. A PixelAugmenter built from it is deterministic, so every context
// frame of a row gets exactly the same masks and displacement field.
#include <cstdint>  // std::uint8_t, std::uint32_t, std::uint64_t
#include <vector>   // std::vector

#include <opencv2/core.hpp>  // cv::Mat (precomputed remap tables)

#include "data/rng.hpp"  // KeyedRng

namespace trainer::data {

// Fixed-point remap tables of an elastic field (cv::convertMaps, CV_16SC2 + CV_16UC1).
struct ElasticMaps {
  cv::Mat xy, fraction;
};

// Working images reused from frame to frame (large allocations freed and made again
// per frame cost more in page faults than the arithmetic).
struct AugmentBuffers {
  cv::Mat bytes, noise, field, mx, my, copy;
};

// One salt or pepper pixel: its index (y * W + x) and new value for all channels.
struct Replacement {
  std::uint32_t pixel;
  std::uint8_t value;
};

struct PixelAugment {
  bool motion_blur = false;  // p = 0.5, k = 5
  double blur_angle = 0;      // degrees, [-90, 90]
  double blur_direction = 0;  // [-1, 1]: weight ramp along the line
  bool dropout = false;           // p = 0.5: drop 2 % of a 30 %-resolution grid
  bool dropout_per_channel = false;  // p = 0.5 (only matters for C = 3)
  std::uint64_t dropout_seed = 0;
  bool salt = false;  // p = 0.5: 1 % of a [5 %, 10 %]-resolution grid
  double salt_size = 0.05;
  std::uint64_t salt_seed = 0;
  bool pepper = false;  // p = 0.5: as salt
  double pepper_size = 0.05;
  std::uint64_t pepper_seed = 0;
  bool elastic = false;  // p = 0.5, alpha in [0, 10], sigma = 5
  double elastic_alpha = 0;
  std::uint64_t elastic_seed = 0;
  bool equalize = false;  // p = 0.1
  bool clahe = false;     // p = 0.1, clip limit in [0.1, 8], tile grid 3..12
  double clahe_clip = 1;
  int clahe_tiles = 8;
  bool emboss = false;  // p = 0.1, alpha in [0, 0.5], strength in [0.5, 1.5]
  double emboss_alpha = 0;
  double emboss_strength = 1;
  // Network-input pixels per pixel of the frame these steps run on in lightning-pose
  // (the stored frame, before its CropAndPad and resize): imgaug's sizes are in that
  // frame's pixels, so here MotionBlur's length, the coarse grids' cells and the
  // elastic field's sigma and alpha scale by it (1: the sizes as imgaug writes them).
  double stored_scale_x = 1, stored_scale_y = 1;
  // Where lightning-pose's frame lands at the network's size before its CropAndPad
  // (which comes after these steps there): the steps run inside this rectangle only,
  // so CropAndPad's black padding stays black and out of the histograms. Zero width
  // or height: the whole image.
  int region_x = 0, region_y = 0, region_w = 0, region_h = 0;

  bool any() const {
    return motion_blur || dropout || salt || pepper || elastic || equalize || clahe || emboss;
  }
  bool moves_keypoints() const { return elastic && elastic_alpha > 0; }
};

// Makes every draw (a fixed number, used or not, so one choice never shifts another).
PixelAugment draw_pixel_augment(KeyedRng& rng);

// Builds the masks and the displacement field for one frame size once; apply() and
// move_keypoints() may then be called for every context frame.
// Builds the masks and the displacement field for one frame size once; apply() and
// move_keypoints() may then be called for every context frame. prepare() reuses the
// buffers of the previous frame (the loader keeps one augmenter per worker).
class PixelAugmenter {
 public:
  PixelAugmenter() = default;
  PixelAugmenter(const PixelAugment& plan, int h, int w, int c);
  void prepare(const PixelAugment& plan, int h, int w, int c);
  // In place on one H*W*C image.
  void apply(std::uint8_t* img) const;
  // Moves (x, y) pairs (continuous pixel coordinates) with the elastic field; a
  // keypoint that leaves [0, W) x [0, H) becomes NaN, NaN stays NaN.
  void move_keypoints(float* xy, int num_keypoints) const;

 private:
  // The steps on the region's own contiguous copy (rows of w_ pixels).
  void apply_region(std::uint8_t* img) const;

  PixelAugment plan_;
  int h_ = 0, w_ = 0, c_ = 1;               // the region the steps run on
  int full_h_ = 0, full_w_ = 0, x0_ = 0, y0_ = 0;  // the image, and the region's corner in it
  bool whole_ = true;                       // the region is the whole image
  int blur_size_ = 0;                       // odd; 0: the blur is shorter than 3 network pixels (none)
  std::vector<float> blur_kernel_;          // blur_size_^2
  std::vector<std::uint8_t> dropout_mask_;  // H*W*C, 1 = dropped
  std::vector<Replacement> salt_, pepper_;  // the few pixels they replace
  std::vector<float> dx_, dy_;              // H*W elastic displacement (source = output + d)
  ElasticMaps maps_;                        // the same, as remap tables
  mutable AugmentBuffers buf_;              // scratch images (apply is logically const)
  mutable std::vector<std::uint8_t> region_;  // the region's pixels while the steps run
};

// The single augmenters, exposed for tests. All work in place on H*W*C uint8.
// imgaug MotionBlur: a k x k kernel holding a line through the centre, rotated by
// angle_deg (0 = vertical), weights ramping linearly along it by direction, normalized.
std::vector<float> motion_blur_kernel(int k, double angle_deg, double direction);
void convolve(std::uint8_t* img, int h, int w, int c, const std::vector<float>& kernel, int k);
void convolve(std::uint8_t* img, int h, int w, int c, const std::vector<float>& kernel, int k, AugmentBuffers& buf);
// imgaug's coarse masks: a Bernoulli(p) grid of max(int(H*size), min_size) x
// max(int(W*size), min_size) cells, scaled up to H x W by nearest neighbour; one grid
// per channel when per_channel, else one shared by all channels. Returns H*W*C of 0/1.
std::vector<std::uint8_t> coarse_mask(int h, int w, int c, double p, double size, int min_size, bool per_channel,
                                      KeyedRng& rng);
void coarse_mask(int h, int w, int c, double p, double size, int min_size, bool per_channel, KeyedRng& rng,
                 std::vector<std::uint8_t>& out);
// The same with the grid's size as separate fractions of W and H.
void coarse_mask(int h, int w, int c, double p, double size_x, double size_y, int min_size, bool per_channel,
                 KeyedRng& rng, std::vector<std::uint8_t>& out);
// MotionBlur's kernel size at network size: imgaug's k = 5 stored pixels times
// `stored_scale`, to the nearest odd size; 0 (no blur) below 3.
int motion_blur_size(double stored_scale);
// imgaug Salt / Pepper replacement values: |Beta(0.5, 0.5) - 0.5| pushed above
// (salt) or below (pepper) 0.5, times 255, rounded: salt in [128, 255], pepper in [0, 127].
int salt_value(KeyedRng& rng);
int pepper_value(KeyedRng& rng);
// imgaug ElasticTransformation shift maps: uniform [-1, 1] noise (with a border so the
// blur sees no edge), Gaussian-blurred with sigma, times alpha, cropped to H x W.
void elastic_field(int h, int w, double alpha, double sigma, KeyedRng& rng, std::vector<float>& dx,
                   std::vector<float>& dy);
void elastic_field(int h, int w, double alpha, double sigma, KeyedRng& rng, std::vector<float>& dx,
                   std::vector<float>& dy, AugmentBuffers& buf);
// out(y, x) = in(y + dy, x + dx), bilinear (imgaug: bicubic), black outside (cval 0).
void elastic_remap(std::uint8_t* img, int h, int w, int c, const std::vector<float>& dx, const std::vector<float>& dy);
void elastic_maps(int h, int w, const std::vector<float>& dx, const std::vector<float>& dy, ElasticMaps& maps,
                  AugmentBuffers& buf);
void elastic_remap(std::uint8_t* img, int h, int w, int c, const ElasticMaps& maps, AugmentBuffers& buf);
// Moves (x, y) pairs (continuous coordinates) to where elastic_remap puts the content
// under them; outside [0, W) x [0, H) becomes NaN.
void elastic_move_keypoints(const std::vector<float>& dx, const std::vector<float>& dy, int h, int w, float* xy,
                            int num_keypoints);
void equalize_histogram(std::uint8_t* img, int h, int w, int c);  // per channel
void clahe(std::uint8_t* img, int h, int w, int c, double clip_limit, int tiles);  // per channel
// imgaug Emboss 3x3 kernel: (1 - alpha) * identity + alpha * emboss(strength).
std::vector<float> emboss_kernel(double alpha, double strength);

}  // namespace trainer::data
