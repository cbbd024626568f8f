// imgaug-style image-space augmenters of the dlc pipeline (see augment_pixels.hpp).
#include "data/augment_pixels.hpp"

#include <opencv2/imgproc.hpp>  // cv::filter2D, cv::warpAffine, cv::GaussianBlur, cv::remap, cv::equalizeHist, cv::createCLAHE

#include <algorithm>  // std::max, std::min, std::clamp
#include <cmath>      // std::sin, std::lround, std::floor, std::isnan, std::abs
#include <limits>     // std::numeric_limits

namespace trainer::data {

namespace {

constexpr int kBlurK = 5;               // MotionBlur k
constexpr double kDropoutP = 0.02;      // CoarseDropout p
constexpr double kDropoutSize = 0.3;    // CoarseDropout size_percent
constexpr double kSaltPepperP = 0.01;   // CoarseSalt / CoarsePepper p
constexpr int kCoarseMinSize = 4;       // imgaug's min_size for the Coarse* augmenters
constexpr double kElasticSigma = 5.0;

int cv_type(int c) { return c == 1 ? CV_8UC1 : CV_8UC3; }

// One channel of an interleaved image through a single-channel OpenCV operation.
template <typename Op>
void per_channel(std::uint8_t* img, int h, int w, int c, Op op) {
  if (c == 1) {
    cv::Mat plane(h, w, CV_8UC1, img);
    cv::Mat out;
    op(plane, out);
    out.copyTo(plane);
    return;
  }
  cv::Mat all(h, w, cv_type(c), img);
  std::vector<cv::Mat> planes;
  cv::split(all, planes);
  for (auto& p : planes) {
    cv::Mat out;
    op(p, out);
    p = out;
  }
  cv::merge(planes, all);
}

// |Beta(0.5, 0.5) - 0.5|: Beta(1/2, 1/2) is the arcsine law, sin^2(pi U / 2).
double beta_half_distance(KeyedRng& rng) {
  const double s = std::sin(1.5707963267948966 * rng.uniform());
  return std::abs(s * s - 0.5);
}

// Per-pixel replacement values where a coarse mask hits, -1 elsewhere (one value per
// pixel for all channels: imgaug's per_channel = False).
std::vector<std::int16_t> replacement_map(int h, int w, double size, bool salt, KeyedRng& rng) {
  const std::vector<std::uint8_t> hit = coarse_mask(h, w, 1, kSaltPepperP, size, kCoarseMinSize, false, rng);
  std::vector<std::int16_t> out(hit.size(), -1);
  for (std::size_t i = 0; i < hit.size(); ++i)
    if (hit[i]) out[i] = static_cast<std::int16_t>(salt ? salt_value(rng) : pepper_value(rng));
  return out;
}

void replace(std::uint8_t* img, std::size_t pixels, int c, const std::vector<std::int16_t>& values) {
  for (std::size_t i = 0; i < pixels; ++i) {
    if (values[i] < 0) continue;
    for (int ch = 0; ch < c; ++ch) img[i * c + ch] = static_cast<std::uint8_t>(values[i]);
  }
}

// Bilinear sample of a H*W float field at pixel-index coordinates, clamped to the field.
float sample(const std::vector<float>& f, int h, int w, double x, double y) {
  x = std::clamp(x, 0.0, w - 1.0);
  y = std::clamp(y, 0.0, h - 1.0);
  const int x0 = std::min(static_cast<int>(x), w - 2 < 0 ? 0 : w - 2);
  const int y0 = std::min(static_cast<int>(y), h - 2 < 0 ? 0 : h - 2);
  const int x1 = std::min(x0 + 1, w - 1), y1 = std::min(y0 + 1, h - 1);
  const double fx = x - x0, fy = y - y0;
  auto at = [&](int yy, int xx) { return static_cast<double>(f[static_cast<std::size_t>(yy) * w + xx]); };
  return static_cast<float>((1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x1)) +
                            fy * ((1 - fx) * at(y1, x0) + fx * at(y1, x1)));
}

}  // namespace

PixelAugment draw_pixel_augment(KeyedRng& rng) {
  PixelAugment a;
  a.motion_blur = rng.chance(0.5);
  a.blur_angle = rng.uniform(-90.0, 90.0);
  a.blur_direction = rng.uniform(-1.0, 1.0);
  a.dropout = rng.chance(0.5);
  a.dropout_per_channel = rng.chance(0.5);
  a.dropout_seed = rng.next_u64();
  a.salt = rng.chance(0.5);
  a.salt_size = rng.uniform(0.05, 0.1);
  a.salt_seed = rng.next_u64();
  a.pepper = rng.chance(0.5);
  a.pepper_size = rng.uniform(0.05, 0.1);
  a.pepper_seed = rng.next_u64();
  a.elastic = rng.chance(0.5);
  a.elastic_alpha = rng.uniform(0.0, 10.0);
  a.elastic_seed = rng.next_u64();
  a.equalize = rng.chance(0.1);
  a.clahe = rng.chance(0.1);
  a.clahe_clip = rng.uniform(0.1, 8.0);
  a.clahe_tiles = 3 + static_cast<int>(rng.below(10));
  a.emboss = rng.chance(0.1);
  a.emboss_alpha = rng.uniform(0.0, 0.5);
  a.emboss_strength = rng.uniform(0.5, 1.5);
  return a;
}

std::vector<float> motion_blur_kernel(int k, double angle_deg, double direction) {
  if (k % 2 == 0) ++k;  // imgaug makes k odd
  const double d = (std::clamp(direction, -1.0, 1.0) + 1.0) / 2.0;
  cv::Mat line = cv::Mat::zeros(k, k, CV_32F);
  for (int i = 0; i < k; ++i)
    line.at<float>(i, k / 2) = static_cast<float>(k == 1 ? d : d + (1.0 - 2.0 * d) * i / (k - 1));
  const double centre = (k - 1) / 2.0;
  // OpenCV's positive angle is counter-clockwise; imgaug rotates clockwise.
  const cv::Mat rot = cv::getRotationMatrix2D(cv::Point2f(static_cast<float>(centre), static_cast<float>(centre)),
                                              -angle_deg, 1.0);
  cv::Mat rotated;
  cv::warpAffine(line, rotated, rot, line.size(), cv::INTER_LINEAR, cv::BORDER_CONSTANT, cv::Scalar::all(0));
  const double sum = cv::sum(rotated)[0];
  std::vector<float> out(static_cast<std::size_t>(k) * k);
  for (int y = 0; y < k; ++y)
    for (int x = 0; x < k; ++x)
      out[static_cast<std::size_t>(y) * k + x] = sum > 0 ? static_cast<float>(rotated.at<float>(y, x) / sum) : 0.0f;
  if (!(sum > 0)) out[static_cast<std::size_t>(k / 2) * k + k / 2] = 1.0f;  // degenerate: identity
  return out;
}

void convolve(std::uint8_t* img, int h, int w, int c, const std::vector<float>& kernel, int k) {
  cv::Mat mat(h, w, cv_type(c), img);
  const cv::Mat src = mat.clone();
  const cv::Mat kern(k, k, CV_32F, const_cast<float*>(kernel.data()));
  // imgaug's Convolve: cv2.filter2D with the default reflect-101 border, rounded and saturated.
  cv::filter2D(src, mat, -1, kern);
}

std::vector<std::uint8_t> coarse_mask(int h, int w, int c, double p, double size, int min_size, bool per_channel,
                                      KeyedRng& rng) {
  const int gh = std::max(static_cast<int>(h * size), min_size);
  const int gw = std::max(static_cast<int>(w * size), min_size);
  const int grids = per_channel ? c : 1;
  std::vector<std::uint8_t> grid(static_cast<std::size_t>(gh) * gw * grids);
  for (auto& g : grid) g = rng.chance(p) ? 1 : 0;
  // Nearest-neighbour upscaling (OpenCV INTER_NEAREST: source cell floor(x * gw / w)).
  std::vector<int> col(static_cast<std::size_t>(w));
  for (int x = 0; x < w; ++x) col[static_cast<std::size_t>(x)] = std::min(static_cast<int>(static_cast<long long>(x) * gw / w), gw - 1);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(h) * w * c);
  for (int y = 0; y < h; ++y) {
    const int gy = std::min(static_cast<int>(static_cast<long long>(y) * gh / h), gh - 1);
    for (int x = 0; x < w; ++x)
      for (int ch = 0; ch < c; ++ch) {
        const int g = per_channel ? ch : 0;
        out[(static_cast<std::size_t>(y) * w + x) * c + ch] =
            grid[(static_cast<std::size_t>(g) * gh + gy) * gw + static_cast<std::size_t>(col[static_cast<std::size_t>(x)])];
      }
  }
  return out;
}

int salt_value(KeyedRng& rng) { return static_cast<int>(std::lround((0.5 + beta_half_distance(rng)) * 255.0)); }
int pepper_value(KeyedRng& rng) { return static_cast<int>(std::lround((0.5 - beta_half_distance(rng)) * 255.0)); }

void elastic_field(int h, int w, double alpha, double sigma, KeyedRng& rng, std::vector<float>& dx,
                   std::vector<float>& dy) {
  // imgaug's kernel size for this sigma, and a border of that size around the field.
  const double factor = sigma < 3.0 ? 3.3 : sigma < 5.0 ? 2.9 : 2.6;
  int ksize = std::max(static_cast<int>(factor * sigma), 5);
  if (ksize % 2 == 0) ++ksize;
  const int pad = ksize;
  const int ph = h + 2 * pad, pw = w + 2 * pad;
  auto one = [&](std::vector<float>& d) {
    // cv::RNG (a fixed multiply-with-carry generator, the same on every platform) is
    // 4x faster than drawing 2 * (H + 2 pad) * (W + 2 pad) values one by one.
    cv::RNG noise_rng(rng.next_u64() | 1u);
    cv::Mat noise(ph, pw, CV_32F);
    noise_rng.fill(noise, cv::RNG::UNIFORM, -1.0f, 1.0f);
    cv::Mat smooth;
    cv::GaussianBlur(noise, smooth, cv::Size(ksize, ksize), sigma, sigma, cv::BORDER_REFLECT_101);
    d.resize(static_cast<std::size_t>(h) * w);
    for (int y = 0; y < h; ++y) {
      const float* row = smooth.ptr<float>(y + pad) + pad;
      for (int x = 0; x < w; ++x) d[static_cast<std::size_t>(y) * w + x] = static_cast<float>(alpha * row[x]);
    }
  };
  one(dx);
  one(dy);
}

void elastic_remap(std::uint8_t* img, int h, int w, int c, const std::vector<float>& dx, const std::vector<float>& dy) {
  cv::Mat mx(h, w, CV_32F), my(h, w, CV_32F);
  for (int y = 0; y < h; ++y) {
    float* rx = mx.ptr<float>(y);
    float* ry = my.ptr<float>(y);
    for (int x = 0; x < w; ++x) {
      const std::size_t i = static_cast<std::size_t>(y) * w + x;
      rx[x] = static_cast<float>(x) + dx[i];
      ry[x] = static_cast<float>(y) + dy[i];
    }
  }
  cv::Mat mat(h, w, cv_type(c), img);
  const cv::Mat src = mat.clone();
  // Bilinear, where imgaug uses bicubic (order 3): the displacements are about a pixel
  // at most, and bicubic costs 6x as much (1.4 vs 0.25 ms at 256x256x3).
  cv::remap(src, mat, mx, my, cv::INTER_LINEAR, cv::BORDER_CONSTANT, cv::Scalar::all(0));
}

void equalize_histogram(std::uint8_t* img, int h, int w, int c) {
  per_channel(img, h, w, c, [](const cv::Mat& in, cv::Mat& out) { cv::equalizeHist(in, out); });
}

void clahe(std::uint8_t* img, int h, int w, int c, double clip_limit, int tiles) {
  const cv::Ptr<cv::CLAHE> op = cv::createCLAHE(clip_limit, cv::Size(tiles, tiles));
  per_channel(img, h, w, c, [&](const cv::Mat& in, cv::Mat& out) { op->apply(in, out); });
}

std::vector<float> emboss_kernel(double alpha, double strength) {
  const double s = strength;
  const double effect[9] = {-1 - s, -s, 0, -s, 1, s, 0, s, 1 + s};
  const double identity[9] = {0, 0, 0, 0, 1, 0, 0, 0, 0};
  std::vector<float> out(9);
  for (int i = 0; i < 9; ++i) out[static_cast<std::size_t>(i)] = static_cast<float>((1 - alpha) * identity[i] + alpha * effect[i]);
  return out;
}

PixelAugmenter::PixelAugmenter(const PixelAugment& plan, int h, int w, int c) : plan_(plan), h_(h), w_(w), c_(c) {
  if (plan_.motion_blur) blur_kernel_ = motion_blur_kernel(kBlurK, plan_.blur_angle, plan_.blur_direction);
  if (plan_.dropout) {
    KeyedRng rng(plan_.dropout_seed);
    dropout_mask_ = coarse_mask(h, w, c, kDropoutP, kDropoutSize, kCoarseMinSize, plan_.dropout_per_channel && c > 1, rng);
  }
  if (plan_.salt) {
    KeyedRng rng(plan_.salt_seed);
    salt_ = replacement_map(h, w, plan_.salt_size, true, rng);
  }
  if (plan_.pepper) {
    KeyedRng rng(plan_.pepper_seed);
    pepper_ = replacement_map(h, w, plan_.pepper_size, false, rng);
  }
  if (plan_.moves_keypoints()) {
    KeyedRng rng(plan_.elastic_seed);
    elastic_field(h, w, plan_.elastic_alpha, kElasticSigma, rng, dx_, dy_);
  }
}

void PixelAugmenter::apply(std::uint8_t* img) const {
  const std::size_t pixels = static_cast<std::size_t>(h_) * w_;
  if (plan_.motion_blur) convolve(img, h_, w_, c_, blur_kernel_, static_cast<int>(kBlurK | 1));
  if (plan_.dropout) {
    // The mask holds 1 where a cell is dropped.
    for (std::size_t i = 0; i < pixels * c_; ++i)
      if (dropout_mask_[i]) img[i] = 0;
  }
  if (plan_.salt) replace(img, pixels, c_, salt_);
  if (plan_.pepper) replace(img, pixels, c_, pepper_);
  if (plan_.moves_keypoints()) elastic_remap(img, h_, w_, c_, dx_, dy_);
  if (plan_.equalize) equalize_histogram(img, h_, w_, c_);
  if (plan_.clahe) clahe(img, h_, w_, c_, plan_.clahe_clip, plan_.clahe_tiles);
  if (plan_.emboss) convolve(img, h_, w_, c_, emboss_kernel(plan_.emboss_alpha, plan_.emboss_strength), 3);
}

void elastic_move_keypoints(const std::vector<float>& dx, const std::vector<float>& dy, int h, int w, float* xy,
                            int num_keypoints) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int k = 0; k < num_keypoints; ++k) {
    float& x = xy[2 * k];
    float& y = xy[2 * k + 1];
    if (std::isnan(x) || std::isnan(y)) continue;
    // Content at source index s shows at output index q with q + d(q) = s; the field is
    // smooth and small, so a few fixed-point steps q <- s - d(q) converge.
    const double sx = x - 0.5, sy = y - 0.5;
    double qx = sx, qy = sy;
    for (int it = 0; it < 6; ++it) {
      const double ddx = sample(dx, h, w, qx, qy), ddy = sample(dy, h, w, qx, qy);
      qx = sx - ddx;
      qy = sy - ddy;
    }
    const double ox = qx + 0.5, oy = qy + 0.5;
    if (ox < 0.0 || oy < 0.0 || ox >= w || oy >= h) {
      x = y = nan;
    } else {
      x = static_cast<float>(ox);
      y = static_cast<float>(oy);
    }
  }
}

void PixelAugmenter::move_keypoints(float* xy, int num_keypoints) const {
  if (plan_.moves_keypoints()) elastic_move_keypoints(dx_, dy_, h_, w_, xy, num_keypoints);
}

}  // namespace trainer::data
