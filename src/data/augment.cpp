// Resize, augmentation and normalization of one frame (see augment.hpp).
#include "data/augment.hpp"

#include <opencv2/imgproc.hpp>  // cv::warpAffine

#include <algorithm>  // std::clamp, std::copy, std::min, std::find
#include <cmath>      // std::cos, std::sin, std::isnan
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

FrameTransform make_transform(int src_h, int src_w, int dst_h, int dst_w, Augmentation aug, std::uint64_t seed,
                              int epoch, std::int64_t frame, bool hflip) {
  FrameTransform t;
  const double sx = static_cast<double>(dst_w) / src_w;
  const double sy = static_cast<double>(dst_h) / src_h;
  // Start with the resize D = diag(sx, sy).
  double a = sx, b = 0, c = 0, d = 0, e = sy, f = 0;
  if (aug != Augmentation::kNone) {
    KeyedRng rng(seed, static_cast<std::uint64_t>(RngPurpose::kAugment), static_cast<std::uint64_t>(epoch),
                 static_cast<std::uint64_t>(frame));
    // Every draw is made whether or not it is used, so one choice never shifts the others.
    const bool rotate = rng.chance(0.4);
    const double angle = rng.uniform(-25.0, 25.0) * 3.141592653589793 / 180.0;
    const bool scale = rng.chance(0.5);
    const double s = rng.uniform(0.85, 1.15);
    const bool shift = rng.chance(0.5);
    const double tx = rng.uniform(-0.1, 0.1) * dst_w, ty = rng.uniform(-0.1, 0.1) * dst_h;
    const bool photo = rng.chance(0.5);
    const double contrast = rng.uniform(0.75, 1.25), brightness = rng.uniform(-25.0, 25.0);
    const double theta = rotate ? angle : 0.0;
    const double k = scale ? s : 1.0;
    // G = T(centre + shift) * R(theta) * S(k) * T(-centre), applied after D.
    const double cx = dst_w / 2.0, cy = dst_h / 2.0;
    const double r00 = k * std::cos(theta), r01 = -k * std::sin(theta);
    const double r10 = k * std::sin(theta), r11 = k * std::cos(theta);
    const double gx = cx + (shift ? tx : 0.0) - (r00 * cx + r01 * cy);
    const double gy = cy + (shift ? ty : 0.0) - (r10 * cx + r11 * cy);
    // G * D
    a = r00 * sx;
    b = r01 * sy;
    c = gx;
    d = r10 * sx;
    e = r11 * sy;
    f = gy;
    // Drawn after the affine part so that its values stay what they were.
    t.pixels = draw_pixel_augment(rng);
    if (photo) {
      t.contrast = static_cast<float>(contrast);
      t.brightness = static_cast<float>(brightness);
    }
    // Quarter turns (imgaug Rot90, keep_size) come first in lightning-pose's
    // pipeline: M = G * Q * D, with Q mapping the dst frame onto itself.
    const int turns = aug == Augmentation::kDlcLr        ? 2 * std::min(1, static_cast<int>(rng.uniform(0.0, 2.0)))
                      : aug == Augmentation::kDlcTopDown ? std::min(3, static_cast<int>(rng.uniform(0.0, 4.0)))
                                                         : 0;
    double Q[6];
    const double W = dst_w, H = dst_h;
    switch (turns % 4) {
      case 1: {  // clockwise: (x, y) -> ((H - y) W / H, x H / W)
        const double Q1[6] = {0, -W / H, W, H / W, 0, 0};
        std::copy(Q1, Q1 + 6, Q);
        break;
      }
      case 2: {  // (x, y) -> (W - x, H - y)
        const double Q2[6] = {-1, 0, W, 0, -1, H};
        std::copy(Q2, Q2 + 6, Q);
        break;
      }
      case 3: {  // counter-clockwise: (x, y) -> (y W / H, (W - x) H / W)
        const double Q3[6] = {0, W / H, 0, -H / W, 0, H};
        std::copy(Q3, Q3 + 6, Q);
        break;
      }
      default: {
        const double I[6] = {1, 0, 0, 0, 1, 0};
        std::copy(I, I + 6, Q);
      }
    }
    // (G * D) * ... is already in a..f with D on the right; insert Q between them:
    // G * Q * D = [G linear](Q * D) + g. With D = diag(sx, sy):
    const double qd[6] = {Q[0] * sx, Q[1] * sy, Q[2], Q[3] * sx, Q[4] * sy, Q[5]};
    const double g0 = r00, g1 = r01, g3 = r10, g4 = r11;
    a = g0 * qd[0] + g1 * qd[3];
    b = g0 * qd[1] + g1 * qd[4];
    c = g0 * qd[2] + g1 * qd[5] + gx;
    d = g3 * qd[0] + g4 * qd[3];
    e = g3 * qd[1] + g4 * qd[4];
    f = g3 * qd[2] + g4 * qd[5] + gy;
  }
  if (hflip) {
    // A stream of its own, so every other draw is the same with or without the flip.
    KeyedRng flip(seed, static_cast<std::uint64_t>(RngPurpose::kFlip), static_cast<std::uint64_t>(epoch),
                  static_cast<std::uint64_t>(frame));
    if (flip.chance(0.5)) {
      t.flipped = true;
      a = -a;
      b = -b;
      c = dst_w - c;
    }
  }
  t.m[0] = a; t.m[1] = b; t.m[2] = c;
  t.m[3] = d; t.m[4] = e; t.m[5] = f;
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

void warp_image(const FrameTransform& t, const std::uint8_t* src, int h, int w, int c, std::uint8_t* dst, int dst_h,
                int dst_w) {
  const int type = c == 1 ? CV_8UC1 : CV_8UC3;
  const cv::Mat in(h, w, type, const_cast<std::uint8_t*>(src));
  cv::Mat out(dst_h, dst_w, type, dst);
  // Pixel-index form of the continuous map: idx' = M (idx + 0.5) - 0.5.
  const double m[6] = {t.m[0], t.m[1], t.m[2] + 0.5 * (t.m[0] + t.m[1]) - 0.5,
                       t.m[3], t.m[4], t.m[5] + 0.5 * (t.m[3] + t.m[4]) - 0.5};
  const cv::Mat matrix(2, 3, CV_64F, const_cast<double*>(m));
  cv::warpAffine(in, out, matrix, cv::Size(dst_w, dst_h), cv::INTER_LINEAR, cv::BORDER_CONSTANT, cv::Scalar::all(0));
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
