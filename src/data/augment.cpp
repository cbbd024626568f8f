// Resize, augmentation and normalization of one frame (see augment.hpp).
#include "data/augment.hpp"

#include <opencv2/imgproc.hpp>  // cv::warpAffine, cv::resize

#include <algorithm>  // std::clamp, std::copy, std::min, std::find
#include <cmath>      // std::cos, std::sin, std::isnan, std::fabs
#include <limits>     // std::numeric_limits

#include "data/rng.hpp"        // KeyedRng, RngPurpose
#include "util/error.hpp"      // UserError
#include "util/name_list.hpp"  // join_names

namespace trainer::data {

const std::vector<std::string>& imgaug_names() {
  static const std::vector<std::string> names = {"default", "none", "dlc", "dlc-lr", "dlc-top-down"};
  return names;
}

Augmentation parse_imgaug(const std::string& name) {
  if (name == "default" || name == "none") return Augmentation::kNone;
  if (name == "dlc") return Augmentation::kDlc;
  if (name == "dlc-lr") return Augmentation::kDlcLr;
  if (name == "dlc-top-down") return Augmentation::kDlcTopDown;
  throw UserError("training.imgaug = '" + name + "' is not supported",
                  "use one of " + join_names(imgaug_names()) + " (default and none: resize only)");
}

std::vector<int> hflip_partners(const std::vector<std::string>& names) {
  const auto ends_with = [](const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  };
  std::vector<int> partner(names.size());
  std::vector<std::string> unmatched;
  for (std::size_t i = 0; i < names.size(); ++i) {
    partner[i] = static_cast<int>(i);
    const bool left = ends_with(names[i], "_left"), right = ends_with(names[i], "_right");
    if (!left && !right) continue;
    const std::string base = names[i].substr(0, names[i].size() - (left ? 5 : 6));
    const std::string other = base + (left ? "_right" : "_left");
    const auto it = std::find(names.begin(), names.end(), other);
    if (it == names.end()) {
      unmatched.push_back(names[i]);
    } else {
      partner[i] = static_cast<int>(it - names.begin());
    }
  }
  if (!unmatched.empty())
    throw UserError("training.imgaug_hflip needs matching _left/_right keypoint pairs, but " + join_names(unmatched) +
                        (unmatched.size() == 1 ? " has" : " have") + " no partner",
                    "rename the keypoints so each _left has a _right, or set training.imgaug_hflip = false");
  return partner;
}

namespace {

// x' = m[0] x + m[1] y + m[2], y' = m[3] x + m[4] y + m[5].
struct Affine {
  double m[6];
};

// The map `second` after `first`.
Affine then(const Affine& first, const Affine& second) {
  const double* f = first.m;
  const double* s = second.m;
  return {{s[0] * f[0] + s[1] * f[3], s[0] * f[1] + s[1] * f[4], s[0] * f[2] + s[1] * f[5] + s[2],
           s[3] * f[0] + s[4] * f[3], s[3] * f[1] + s[4] * f[4], s[3] * f[2] + s[4] * f[5] + s[5]}};
}

// imgaug's Rot90 with keep_size (its default) on a W x H frame: k clockwise quarter
// turns, a non-square result stretched back to W x H.
Affine quarter_turns(int k, double W, double H) {
  switch (k % 4) {
    case 1: return {{0, -W / H, W, H / W, 0, 0}};   // (x, y) -> ((H - y) W / H, x H / W)
    case 2: return {{-1, 0, W, 0, -1, H}};          // (x, y) -> (W - x, H - y)
    case 3: return {{0, W / H, 0, -H / W, 0, H}};   // (x, y) -> (y W / H, (W - x) H / W)
    default: return {{1, 0, 0, 0, 1, 0}};
  }
}

}  // namespace

FrameTransform make_transform(int src_h, int src_w, int dst_h, int dst_w, Augmentation aug, std::uint64_t seed,
                              int epoch, std::int64_t frame, bool hflip) {
  FrameTransform t;
  const double W = src_w, H = src_h;
  // Without augmentation: the resize D = diag(dst_w / W, dst_h / H).
  Affine map{{dst_w / W, 0, 0, 0, dst_h / H, 0}};
  if (aug != Augmentation::kNone) {
    KeyedRng rng(seed, static_cast<std::uint64_t>(RngPurpose::kAugment), static_cast<std::uint64_t>(epoch),
                 static_cast<std::uint64_t>(frame));
    // Every draw is made whether or not it is used, so one choice never shifts the others.
    const bool rotate = rng.chance(0.4);
    const double angle = rng.uniform(-25.0, 25.0) * 3.141592653589793 / 180.0;
    const bool crop_pad = rng.chance(0.4);
    double side[4];  // top, right, bottom, left: > 0 pads, < 0 crops (fractions of H or W)
    for (double& v : side) v = rng.uniform(-0.15, 0.15);
    // Drawn after the geometry so that its values stay what they were.
    t.pixels = draw_pixel_augment(rng);
    const int turns = aug == Augmentation::kDlcLr        ? 2 * std::min(1, static_cast<int>(rng.uniform(0.0, 2.0)))
                      : aug == Augmentation::kDlcTopDown ? std::min(3, static_cast<int>(rng.uniform(0.0, 4.0)))
                                                         : 0;
    // lightning-pose's pipeline, on the frame as stored: Rot90 (dlc-lr, dlc-top-down),
    // Affine(rotate) about the frame's centre, ..., CropAndPad(percent = (-0.15, 0.15),
    // keep_size = False), each side drawn on its own, then Resize to the network's
    // input: one map M = Resize' * CropAndPad * Rotate * Rot90, one warp.
    Affine geometry = quarter_turns(turns, W, H);
    if (rotate) {
      const double c = std::cos(angle), s = std::sin(angle), cx = W / 2, cy = H / 2;
      geometry = then(geometry, {{c, -s, cx - (c * cx - s * cy), s, c, cy - (s * cx + c * cy)}});
    }
    double out_w = W, out_h = H;  // the frame's size before the final resize
    if (crop_pad) {
      geometry = then(geometry, {{1, 0, side[3] * W, 0, 1, side[0] * H}});
      out_w = W * (1 + side[1] + side[3]);
      out_h = H * (1 + side[0] + side[2]);
    }
    map = then(geometry, {{dst_w / out_w, 0, 0, 0, dst_h / out_h, 0}});
    // lightning-pose runs the image-space steps on this frame, before its resize.
    t.pixels.stored_scale_x = dst_w / out_w;
    t.pixels.stored_scale_y = dst_h / out_h;
    if (crop_pad) {  // the frame before CropAndPad, at the network's size: the steps' region
      const long x0 = std::lround(side[3] * W * dst_w / out_w), x1 = std::lround((1 + side[3]) * W * dst_w / out_w);
      const long y0 = std::lround(side[0] * H * dst_h / out_h), y1 = std::lround((1 + side[0]) * H * dst_h / out_h);
      t.pixels.region_x = static_cast<int>(x0);
      t.pixels.region_y = static_cast<int>(y0);
      t.pixels.region_w = static_cast<int>(x1 - x0);
      t.pixels.region_h = static_cast<int>(y1 - y0);
    }
  }
  if (hflip) {
    // A stream of its own, so every other draw is the same with or without the flip.
    KeyedRng flip(seed, static_cast<std::uint64_t>(RngPurpose::kFlip), static_cast<std::uint64_t>(epoch),
                  static_cast<std::uint64_t>(frame));
    if (flip.chance(0.5)) {
      t.flipped = true;
      map = then(map, {{-1, 0, double(dst_w), 0, 1, 0}});
      if (t.pixels.region_w > 0) t.pixels.region_x = dst_w - t.pixels.region_x - t.pixels.region_w;
    }
  }
  std::copy(map.m, map.m + 6, t.m);
  return t;
}

void transform_keypoints(const FrameTransform& t, const float* in, float* out, int num_keypoints, int dst_h,
                         int dst_w) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int k = 0; k < num_keypoints; ++k) {
    const double x = in[2 * k], y = in[2 * k + 1];
    if (std::isnan(x) || std::isnan(y)) {
      out[2 * k] = out[2 * k + 1] = nan;
      continue;
    }
    const double xo = t.m[0] * x + t.m[1] * y + t.m[2];
    const double yo = t.m[3] * x + t.m[4] * y + t.m[5];
    if (xo < 0.0 || yo < 0.0 || xo >= dst_w || yo >= dst_h) {
      out[2 * k] = out[2 * k + 1] = nan;
    } else {
      out[2 * k] = static_cast<float>(xo);
      out[2 * k + 1] = static_cast<float>(yo);
    }
  }
}

namespace {
// cv::warpAffine's pixel-index form of the continuous map: idx' = M (idx + 0.5) - 0.5.
void warp_mat(const FrameTransform& t, const cv::Mat& in, cv::Mat& out) {
  const double m[6] = {t.m[0], t.m[1], t.m[2] + 0.5 * (t.m[0] + t.m[1]) - 0.5,
                       t.m[3], t.m[4], t.m[5] + 0.5 * (t.m[3] + t.m[4]) - 0.5};
  const cv::Mat matrix(2, 3, CV_64F, const_cast<double*>(m));
  cv::warpAffine(in, out, matrix, out.size(), cv::INTER_LINEAR, cv::BORDER_CONSTANT, cv::Scalar::all(0));
}
}  // namespace

bool is_plain_resize(const FrameTransform& t, int h, int w, int dst_h, int dst_w) {
  return t.m[1] == 0.0 && t.m[3] == 0.0 && t.m[2] == 0.0 && t.m[5] == 0.0 &&
         std::fabs(t.m[0] * w - dst_w) < 1e-9 * dst_w && std::fabs(t.m[4] * h - dst_h) < 1e-9 * dst_h;
}

void warp_image(const FrameTransform& t, const std::uint8_t* src, int h, int w, int c, std::uint8_t* dst, int dst_h,
                int dst_w) {
  const int type = c == 1 ? CV_8UC1 : CV_8UC3;
  const cv::Mat in(h, w, type, const_cast<std::uint8_t*>(src));
  cv::Mat out(dst_h, dst_w, type, dst);
  // imgaug's Resize, lightning-pose's last step: OpenCV's bicubic resize (edge pixels
  // repeated past the frame). Only a frame that nothing else moved is resized alone;
  // with rotation or CropAndPad the one warp below is bilinear (docs/DATA.md).
  if (is_plain_resize(t, h, w, dst_h, dst_w)) {
    cv::resize(in, out, out.size(), 0, 0, cv::INTER_CUBIC);
    return;
  }
  warp_mat(t, in, out);
}

void warp_image(const FrameTransform& t, const float* src, int h, int w, int c, float* dst, int dst_h, int dst_w) {
  const int type = c == 1 ? CV_32FC1 : CV_32FC3;
  cv::Mat out(dst_h, dst_w, type, dst);
  warp_mat(t, cv::Mat(h, w, type, const_cast<float*>(src)), out);
}

void normalize_to_planes(const FrameTransform& t, const std::uint8_t* img, int h, int w, int c, float* out) {
  float lut[3][256];
  for (int ch = 0; ch < 3; ++ch) {
    for (int v = 0; v < 256; ++v) {
      const float adjusted = std::clamp(t.contrast * (static_cast<float>(v) - 128.0f) + 128.0f + t.brightness, 0.0f, 255.0f);
      lut[ch][v] = (adjusted / 255.0f - kImageNetMean[ch]) / kImageNetStd[ch];
    }
  }
  const size_t plane = static_cast<size_t>(h) * w;
  float* p0 = out;
  float* p1 = out + plane;
  float* p2 = out + 2 * plane;
  if (c == 1) {
    for (size_t i = 0; i < plane; ++i) {
      const std::uint8_t v = img[i];
      p0[i] = lut[0][v];
      p1[i] = lut[1][v];
      p2[i] = lut[2][v];
    }
  } else {
    for (size_t i = 0; i < plane; ++i) {
      p0[i] = lut[0][img[3 * i]];
      p1[i] = lut[1][img[3 * i + 1]];
      p2[i] = lut[2][img[3 * i + 2]];
    }
  }
}

}  // namespace trainer::data
