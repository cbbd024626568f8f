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
// Salt / pepper as a sparse list: the coarse grid at p = 0.01 hits few cells, so only
// their pixels get a replacement value (one per pixel, for all channels: imgaug's
// per_channel = False), drawn in raster order.
void replacement_list(int h, int w, double size_x, double size_y, bool salt, KeyedRng& rng,
                      std::vector<Replacement>& out) {
  // Cells finer than a pixel (a stored frame several times the network's) are a
  // Bernoulli draw per pixel either way: at most one cell a pixel.
  const int gh = std::max(std::min(static_cast<int>(h * size_y), h), kCoarseMinSize);
  const int gw = std::max(std::min(static_cast<int>(w * size_x), w), kCoarseMinSize);
  std::vector<std::uint8_t> grid(static_cast<std::size_t>(gh) * gw);
  std::vector<std::uint8_t> row_hit(static_cast<std::size_t>(gh), 0);
  for (std::size_t i = 0; i < grid.size(); ++i) {
    grid[i] = rng.chance(kSaltPepperP) ? 1 : 0;
    row_hit[i / static_cast<std::size_t>(gw)] |= grid[i];
  }
  out.clear();
  std::vector<int> col;
  for (int y = 0; y < h; ++y) {
    const int gy = std::min(static_cast<int>(static_cast<long long>(y) * gh / h), gh - 1);
    if (!row_hit[static_cast<std::size_t>(gy)]) continue;
    if (col.empty()) {
      col.resize(static_cast<std::size_t>(w));
      for (int x = 0; x < w; ++x)
        col[static_cast<std::size_t>(x)] = std::min(static_cast<int>(static_cast<long long>(x) * gw / w), gw - 1);
    }
    const std::uint8_t* grid_row = grid.data() + static_cast<std::size_t>(gy) * gw;
    for (int x = 0; x < w; ++x) {
      if (!grid_row[col[static_cast<std::size_t>(x)]]) continue;
      const int v = salt ? salt_value(rng) : pepper_value(rng);
      out.push_back({static_cast<std::uint32_t>(static_cast<std::size_t>(y) * w + x), static_cast<std::uint8_t>(v)});
    }
  }
}

void replace(std::uint8_t* img, int c, const std::vector<Replacement>& values) {
  for (const Replacement& r : values)
    for (int ch = 0; ch < c; ++ch) img[static_cast<std::size_t>(r.pixel) * c + ch] = r.value;
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

void convolve(std::uint8_t* img, int h, int w, int c, const std::vector<float>& kernel, int k, AugmentBuffers& buf) {
  cv::Mat mat(h, w, cv_type(c), img);
  mat.copyTo(buf.copy);
  const cv::Mat kern(k, k, CV_32F, const_cast<float*>(kernel.data()));
  // imgaug's Convolve: cv2.filter2D with the default reflect-101 border, rounded and saturated.
  cv::filter2D(buf.copy, mat, -1, kern);
}

void convolve(std::uint8_t* img, int h, int w, int c, const std::vector<float>& kernel, int k) {
  AugmentBuffers buf;
  convolve(img, h, w, c, kernel, k, buf);
}

void coarse_mask(int h, int w, int c, double p, double size, int min_size, bool per_channel, KeyedRng& rng,
                 std::vector<std::uint8_t>& out) {
  coarse_mask(h, w, c, p, size, size, min_size, per_channel, rng, out);
}

void coarse_mask(int h, int w, int c, double p, double size_x, double size_y, int min_size, bool per_channel,
                 KeyedRng& rng, std::vector<std::uint8_t>& out) {
  const int gh = std::max(std::min(static_cast<int>(h * size_y), h), min_size);  // at most a cell a pixel
  const int gw = std::max(std::min(static_cast<int>(w * size_x), w), min_size);
  const int grids = per_channel ? c : 1;
  std::vector<std::uint8_t> grid(static_cast<std::size_t>(gh) * gw * grids);
  for (auto& g : grid) g = rng.chance(p) ? 1 : 0;
  // Nearest-neighbour upscaling (OpenCV INTER_NEAREST: source cell floor(x * gw / w)).
  std::vector<int> col(static_cast<std::size_t>(w));
  for (int x = 0; x < w; ++x) col[static_cast<std::size_t>(x)] = std::min(static_cast<int>(static_cast<long long>(x) * gw / w), gw - 1);
  const std::size_t row_bytes = static_cast<std::size_t>(w) * c;
  out.resize(static_cast<std::size_t>(h) * row_bytes);
  int previous = -1;
  for (int y = 0; y < h; ++y) {
    const int gy = std::min(static_cast<int>(static_cast<long long>(y) * gh / h), gh - 1);
    std::uint8_t* row = out.data() + static_cast<std::size_t>(y) * row_bytes;
    if (gy == previous) {  // same grid row as the line above
      std::copy(row - row_bytes, row, row);
      continue;
    }
    previous = gy;
    for (int x = 0; x < w; ++x)
      for (int ch = 0; ch < c; ++ch) {
        const int g = per_channel ? ch : 0;
        row[static_cast<std::size_t>(x) * c + ch] =
            grid[(static_cast<std::size_t>(g) * gh + gy) * gw + static_cast<std::size_t>(col[static_cast<std::size_t>(x)])];
      }
  }
}

std::vector<std::uint8_t> coarse_mask(int h, int w, int c, double p, double size, int min_size, bool per_channel,
                                      KeyedRng& rng) {
  std::vector<std::uint8_t> out;
  coarse_mask(h, w, c, p, size, min_size, per_channel, rng, out);
  return out;
}

int salt_value(KeyedRng& rng) { return static_cast<int>(std::lround((0.5 + beta_half_distance(rng)) * 255.0)); }
int pepper_value(KeyedRng& rng) { return static_cast<int>(std::lround((0.5 - beta_half_distance(rng)) * 255.0)); }

void elastic_field(int h, int w, double alpha, double sigma, KeyedRng& rng, std::vector<float>& dx,
                   std::vector<float>& dy, AugmentBuffers& buf) {
  // imgaug's kernel size for this sigma, and a border of that size around the field.
  const double factor = sigma < 3.0 ? 3.3 : sigma < 5.0 ? 2.9 : 2.6;
  int ksize = std::max(static_cast<int>(factor * sigma), 5);
  if (ksize % 2 == 0) ++ksize;
  const int pad = ksize;
  // dx and dy as the two channels of one image: one fill, one blur. The noise is drawn
  // as bytes by cv::RNG (a fixed multiply-with-carry generator, the same on every
  // platform) and mapped to 256 evenly spaced levels in [-1, 1]: after a blur that
  // averages ~100 of them this is indistinguishable from continuous uniform noise, and
  // 4x cheaper than float draws (10x cheaper than KeyedRng one value at a time).
  cv::RNG noise_rng(rng.next_u64() | 1u);
  buf.bytes.create(h + 2 * pad, w + 2 * pad, CV_8UC2);
  noise_rng.fill(buf.bytes, cv::RNG::UNIFORM, 0, 256);
  buf.bytes.convertTo(buf.noise, CV_32F, 2.0 / 255.0, -1.0);
  cv::GaussianBlur(buf.noise, buf.field, cv::Size(ksize, ksize), sigma, sigma, cv::BORDER_REFLECT_101);
  const cv::Mat& field = buf.field;
  dx.resize(static_cast<std::size_t>(h) * w);
  dy.resize(static_cast<std::size_t>(h) * w);
  const float a = static_cast<float>(alpha);
  for (int y = 0; y < h; ++y) {
    const float* row = field.ptr<float>(y + pad) + 2 * pad;
    for (int x = 0; x < w; ++x) {
      dx[static_cast<std::size_t>(y) * w + x] = a * row[2 * x];
      dy[static_cast<std::size_t>(y) * w + x] = a * row[2 * x + 1];
    }
  }
}

void elastic_field(int h, int w, double alpha, double sigma, KeyedRng& rng, std::vector<float>& dx,
                   std::vector<float>& dy) {
  AugmentBuffers buf;
  elastic_field(h, w, alpha, sigma, rng, dx, dy, buf);
}

void elastic_maps(int h, int w, const std::vector<float>& dx, const std::vector<float>& dy, ElasticMaps& maps,
                  AugmentBuffers& buf) {
  buf.mx.create(h, w, CV_32F);
  buf.my.create(h, w, CV_32F);
  for (int y = 0; y < h; ++y) {
    float* rx = buf.mx.ptr<float>(y);
    float* ry = buf.my.ptr<float>(y);
    for (int x = 0; x < w; ++x) {
      const std::size_t i = static_cast<std::size_t>(y) * w + x;
      rx[x] = static_cast<float>(x) + dx[i];
      ry[x] = static_cast<float>(y) + dy[i];
    }
  }
  // Fixed-point maps: built once per row, reused by every context frame.
  cv::convertMaps(buf.mx, buf.my, maps.xy, maps.fraction, CV_16SC2);
}

void elastic_remap(std::uint8_t* img, int h, int w, int c, const ElasticMaps& maps, AugmentBuffers& buf) {
  cv::Mat mat(h, w, cv_type(c), img);
  mat.copyTo(buf.copy);
  // Bilinear, where imgaug uses bicubic (order 3): the displacements are about a pixel
  // at most, and bicubic costs 6x as much (1.4 vs 0.25 ms at 256x256x3).
  cv::remap(buf.copy, mat, maps.xy, maps.fraction, cv::INTER_LINEAR, cv::BORDER_CONSTANT, cv::Scalar::all(0));
}

void elastic_remap(std::uint8_t* img, int h, int w, int c, const std::vector<float>& dx, const std::vector<float>& dy) {
  AugmentBuffers buf;
  ElasticMaps maps;
  elastic_maps(h, w, dx, dy, maps, buf);
  elastic_remap(img, h, w, c, maps, buf);
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

PixelAugmenter::PixelAugmenter(const PixelAugment& plan, int h, int w, int c) { prepare(plan, h, w, c); }

int motion_blur_size(double stored_scale) {
  // imgaug's k = 5 stored pixels, in network pixels, to the nearest odd size; a blur
  // shorter than 3 network pixels is dropped (the resize would have averaged it away).
  const int k = 2 * static_cast<int>(std::lround((kBlurK * stored_scale - 1.0) / 2.0)) + 1;
  return k < 3 ? 0 : k;
}

void PixelAugmenter::prepare(const PixelAugment& plan, int full_h, int full_w, int c) {
  plan_ = plan;
  full_h_ = full_h;
  full_w_ = full_w;
  c_ = c;
  // The region, clamped to the image (empty: the whole image).
  x0_ = std::clamp(plan.region_x, 0, full_w);
  y0_ = std::clamp(plan.region_y, 0, full_h);
  const int x1 = std::clamp(plan.region_x + plan.region_w, x0_, full_w);
  const int y1 = std::clamp(plan.region_y + plan.region_h, y0_, full_h);
  whole_ = plan.region_w <= 0 || plan.region_h <= 0 || x1 - x0_ < 1 || y1 - y0_ < 1 ||
           (x0_ == 0 && y0_ == 0 && x1 == full_w && y1 == full_h);
  if (whole_) x0_ = y0_ = 0;
  const int h = whole_ ? full_h : y1 - y0_;
  const int w = whole_ ? full_w : x1 - x0_;
  h_ = h;
  w_ = w;
  // imgaug's sizes are in the stored frame's pixels (PixelAugment::stored_scale_*).
  const double sx = plan_.stored_scale_x > 0 ? plan_.stored_scale_x : 1.0;
  const double sy = plan_.stored_scale_y > 0 ? plan_.stored_scale_y : 1.0;
  const double scale = std::sqrt(sx * sy);
  blur_size_ = plan_.motion_blur ? motion_blur_size(scale) : 0;
  if (blur_size_ > 0) blur_kernel_ = motion_blur_kernel(blur_size_, plan_.blur_angle, plan_.blur_direction);
  if (plan_.dropout) {
    KeyedRng rng(plan_.dropout_seed);
    coarse_mask(h, w, c, kDropoutP, kDropoutSize / sx, kDropoutSize / sy, kCoarseMinSize,
                plan_.dropout_per_channel && c > 1, rng, dropout_mask_);
  }
  if (plan_.salt) {
    KeyedRng rng(plan_.salt_seed);
    replacement_list(h, w, plan_.salt_size / sx, plan_.salt_size / sy, true, rng, salt_);
  }
  if (plan_.pepper) {
    KeyedRng rng(plan_.pepper_seed);
    replacement_list(h, w, plan_.pepper_size / sx, plan_.pepper_size / sy, false, rng, pepper_);
  }
  if (plan_.moves_keypoints()) {
    KeyedRng rng(plan_.elastic_seed);
    elastic_field(h, w, plan_.elastic_alpha * scale, kElasticSigma * scale, rng, dx_, dy_, buf_);
    elastic_maps(h, w, dx_, dy_, maps_, buf_);
  }
}

void PixelAugmenter::apply(std::uint8_t* img) const {
  if (whole_) {
    apply_region(img);
    return;
  }
  const std::size_t row = static_cast<std::size_t>(w_) * c_, full_row = static_cast<std::size_t>(full_w_) * c_;
  region_.resize(row * static_cast<std::size_t>(h_));
  std::uint8_t* at = img + static_cast<std::size_t>(y0_) * full_row + static_cast<std::size_t>(x0_) * c_;
  for (int y = 0; y < h_; ++y) std::copy(at + y * full_row, at + y * full_row + row, region_.data() + y * row);
  apply_region(region_.data());
  for (int y = 0; y < h_; ++y) std::copy(region_.data() + y * row, region_.data() + (y + 1) * row, at + y * full_row);
}

void PixelAugmenter::apply_region(std::uint8_t* img) const {
  const std::size_t pixels = static_cast<std::size_t>(h_) * w_;
  if (blur_size_ > 0) convolve(img, h_, w_, c_, blur_kernel_, blur_size_, buf_);
  if (plan_.dropout) {
    // The mask holds 1 where a cell is dropped: 1 - 1 = 0 clears, 0 - 1 = 0xFF keeps
    // (branch-free, so the compiler vectorizes it).
    const std::size_t n = pixels * static_cast<std::size_t>(c_);
    const std::uint8_t* mask = dropout_mask_.data();
    for (std::size_t i = 0; i < n; ++i) img[i] &= static_cast<std::uint8_t>(mask[i] - 1u);
  }
  if (plan_.salt) replace(img, c_, salt_);
  if (plan_.pepper) replace(img, c_, pepper_);
  if (plan_.moves_keypoints()) elastic_remap(img, h_, w_, c_, maps_, buf_);
  if (plan_.equalize) equalize_histogram(img, h_, w_, c_);
  if (plan_.clahe) clahe(img, h_, w_, c_, plan_.clahe_clip, plan_.clahe_tiles);
  if (plan_.emboss) convolve(img, h_, w_, c_, emboss_kernel(plan_.emboss_alpha, plan_.emboss_strength), 3, buf_);
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
  if (!plan_.moves_keypoints()) return;
  if (whole_) {
    elastic_move_keypoints(dx_, dy_, h_, w_, xy, num_keypoints);
    return;
  }
  // In the region's coordinates; a keypoint outside the region is not moved (the field
  // only covers the region) and one the field moves out of it becomes NaN.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int k = 0; k < num_keypoints; ++k) {
    float p[2] = {xy[2 * k] - float(x0_), xy[2 * k + 1] - float(y0_)};
    if (std::isnan(p[0]) || std::isnan(p[1]) || p[0] < 0 || p[1] < 0 || p[0] >= w_ || p[1] >= h_) continue;
    elastic_move_keypoints(dx_, dy_, h_, w_, p, 1);
    xy[2 * k] = std::isnan(p[0]) ? nan : p[0] + float(x0_);
    xy[2 * k + 1] = std::isnan(p[1]) ? nan : p[1] + float(y0_);
  }
}

}  // namespace trainer::data
