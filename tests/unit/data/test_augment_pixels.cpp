// The image-space dlc augmenters (imgaug semantics), their probabilities, and how the
// loader applies them (context frames, determinism).
#include <catch2/catch.hpp>

#include <algorithm>  // std::min_element, std::max_element, std::all_of
#include <cmath>      // std::exp, std::sqrt, std::isnan, std::hypot
#include <cstring>    // std::memcmp
#include <utility>  // std::pair
#include <vector>

#include "data/augment.hpp"
#include "data/augment_pixels.hpp"
#include "data/context.hpp"
#include "data/dataset.hpp"
#include "data/loader.hpp"
#include "data/synth.hpp"
#include "scratch_dir.hpp"

using namespace trainer::data;

namespace {
using Image = std::vector<std::uint8_t>;

Image noise_image(int h, int w, int c, std::uint64_t seed) {
  KeyedRng rng(seed);
  Image img(static_cast<size_t>(h) * w * c);
  for (auto& v : img) v = static_cast<std::uint8_t>(rng.below(256));
  return img;
}

// Checks that an observed count is within `sigmas` standard errors of n * p.
void check_rate(double count, double n, double p, double sigmas = 4.0) {
  const double se = std::sqrt(n * p * (1 - p));
  INFO("count " << count << " of " << n << ", expected p " << p);
  CHECK(std::abs(count - n * p) <= sigmas * se);
}
}  // namespace

TEST_CASE("motion blur keeps a constant image and spreads a point along a line of k pixels", "[data]") {
  for (double angle : {-90.0, -37.0, 0.0, 45.0, 90.0}) {
    for (double direction : {-1.0, 0.0, 0.6}) {
      const std::vector<float> k = motion_blur_kernel(5, angle, direction);
      double sum = 0;
      for (float v : k) sum += v;
      CHECK(sum == Approx(1.0).margin(1e-5));
      Image flat(20 * 30 * 3, 77);
      convolve(flat.data(), 20, 30, 3, k, 5);
      CHECK(std::all_of(flat.begin(), flat.end(), [](std::uint8_t v) { return v == 77; }));
    }
  }
  // Vertical (angle 0) and horizontal (angle 90) lines with equal weights (direction 0).
  for (double angle : {0.0, 90.0}) {
    Image dot(21 * 21, 0);
    dot[10 * 21 + 10] = 255;
    convolve(dot.data(), 21, 21, 1, motion_blur_kernel(5, angle, 0.0), 5);
    int lit = 0;
    for (int y = 0; y < 21; ++y)
      for (int x = 0; x < 21; ++x) {
        const int v = dot[static_cast<size_t>(y) * 21 + x];
        if (v == 0) continue;
        ++lit;
        CHECK(v == 51);  // 255 / 5
        if (angle == 0.0) {
          CHECK(x == 10);
          CHECK(std::abs(y - 10) <= 2);
        } else {
          CHECK(y == 10);
          CHECK(std::abs(x - 10) <= 2);
        }
      }
    CHECK(lit == 5);
  }
  // Diagonal: spread within the 5 x 5 box, along the diagonal.
  Image dot(21 * 21, 0);
  dot[10 * 21 + 10] = 255;
  convolve(dot.data(), 21, 21, 1, motion_blur_kernel(5, 45.0, 0.0), 5);
  int total = 0;
  for (int y = 0; y < 21; ++y)
    for (int x = 0; x < 21; ++x) {
      const int v = dot[static_cast<size_t>(y) * 21 + x];
      total += v;
      if (v > 0) {
        CHECK(std::abs(x - 10) <= 2);
        CHECK(std::abs(y - 10) <= 2);
      }
    }
  CHECK(total == Approx(255).margin(5));
  CHECK(dot[8 * 21 + 12] + dot[12 * 21 + 8] > dot[8 * 21 + 8] + dot[12 * 21 + 12]);  // one diagonal only
}

TEST_CASE("coarse dropout zeroes about p of the area in blocks", "[data]") {
  const int h = 60, w = 80;
  PixelAugment plan;
  plan.dropout = true;
  double dropped = 0, pixels = 0;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    plan.dropout_seed = seed;
    Image img(static_cast<size_t>(h) * w, 200);
    PixelAugmenter(plan, h, w, 1).apply(img.data());
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const int v = img[static_cast<size_t>(y) * w + x];
        REQUIRE((v == 0 || v == 200));
        dropped += v == 0;
        pixels += 1;
      }
  }
  // The grid has int(0.3 * 60) x int(0.3 * 80) = 18 x 24 cells; each cell is dropped
  // with p = 0.02, so count cells (blocks of 60/18 x 80/24 pixels, ~11.1 each).
  const double cells = 300.0 * 18 * 24;
  const double cell_pixels = pixels / cells;
  check_rate(dropped / cell_pixels, cells, 0.02);

  // Blocks: a mask at size 0.25 of 64 x 64 is constant on every 4 x 4 block.
  KeyedRng rng(9);
  const std::vector<std::uint8_t> m = coarse_mask(64, 64, 1, 0.5, 0.25, 4, false, rng);
  for (int y = 0; y < 64; ++y)
    for (int x = 0; x < 64; ++x) CHECK(m[static_cast<size_t>(y) * 64 + x] == m[static_cast<size_t>(y / 4 * 4) * 64 + x / 4 * 4]);
  // min_size: a tiny fraction still gives at least 4 x 4 cells.
  KeyedRng rng2(10);
  const std::vector<std::uint8_t> coarse = coarse_mask(40, 40, 1, 0.5, 0.01, 4, false, rng2);
  for (int y = 0; y < 40; ++y)
    for (int x = 0; x < 40; ++x) CHECK(coarse[static_cast<size_t>(y) * 40 + x] == coarse[static_cast<size_t>(y / 10 * 10) * 40 + x / 10 * 10]);
}

TEST_CASE("the image-space steps keep imgaug's sizes in the stored frame's pixels", "[data]") {
  // lightning-pose runs them before its resize, so at the network's size a frame
  // shrunk 4x sees a blur a quarter as long and coarse cells a quarter as wide.
  CHECK(motion_blur_size(1.0) == 5);   // imgaug's k = 5
  CHECK(motion_blur_size(0.63) == 3);  // mirror-mouse, 406 x 396 at 256 x 256: 3.2 pixels
  CHECK(motion_blur_size(0.35) == 0);  // 1.75 pixels: averaged away by the resize
  CHECK(motion_blur_size(2.0) == 11);
  // make_transform hands the pipeline's scale to the steps: dst / src without
  // CropAndPad, dst / (src * (1 + the two sides)) with it.
  bool plain = false, cropped = false;
  for (int frame = 0; frame < 200 && !(plain && cropped); ++frame) {
    const FrameTransform t = make_transform(400, 300, 100, 150, Augmentation::kDlc, 3, 0, frame);
    const double kx = std::hypot(t.m[0], t.m[1]), ky = std::hypot(t.m[3], t.m[4]);
    CHECK(t.pixels.stored_scale_x == Approx(kx));  // the resize after the rotation
    CHECK(t.pixels.stored_scale_y == Approx(ky));
    const bool at_resize = std::abs(kx - 0.5) < 1e-12 && std::abs(ky - 0.25) < 1e-12;
    plain = plain || at_resize;
    cropped = cropped || !at_resize;
  }
  CHECK(plain);
  CHECK(cropped);
  // Coarse dropout's cells: int(0.3 * 60 / 0.25) = 72 rows of cells over 60 pixel rows
  // at scale 0.25, clamped to one a pixel row; 18 (3.3 pixels each) at scale 1.
  const int h = 60, w = 80;
  const auto mean_run = [&](double scale) {
    PixelAugment plan;
    plan.dropout = true;
    plan.stored_scale_x = plan.stored_scale_y = scale;
    double runs = 0, dropped = 0;
    for (std::uint64_t seed = 1; seed <= 100; ++seed) {
      plan.dropout_seed = seed;
      Image img(static_cast<size_t>(h) * w, 200);
      PixelAugmenter(plan, h, w, 1).apply(img.data());
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
          const bool off = img[static_cast<size_t>(y) * w + x] == 0;
          dropped += off;
          runs += off && (x == 0 || img[static_cast<size_t>(y) * w + x - 1] != 0);
        }
    }
    REQUIRE(runs > 0);
    return dropped / runs;
  };
  CHECK(mean_run(1.0) > 2.5);
  CHECK(mean_run(0.25) < 1.5);
}

TEST_CASE("the image-space steps run where the frame lands before CropAndPad, never on its padding", "[data]") {
  // lightning-pose pads after these steps: its padding is black, and the histogram
  // steps never see it. The region comes from make_transform (mirrored with the flip).
  int checked = 0;
  for (int frame = 0; frame < 300; ++frame) {
    const FrameTransform t = make_transform(90, 120, 64, 96, Augmentation::kDlc, 5, 2, frame);
    const double theta = std::atan2(t.m[3], t.m[4]);
    if (t.pixels.region_w == 0 || std::abs(theta) > 1e-12) continue;  // no CropAndPad, or rotated
    // The stored frame's corners land on the region's (to the pixel).
    CHECK(std::abs(t.m[2] - t.pixels.region_x) <= 0.5 + 1e-9);
    CHECK(std::abs(t.m[5] - t.pixels.region_y) <= 0.5 + 1e-9);
    CHECK(std::abs(t.m[0] * 120 + t.m[2] - (t.pixels.region_x + t.pixels.region_w)) <= 1.0 + 1e-9);
    CHECK(std::abs(t.m[4] * 90 + t.m[5] - (t.pixels.region_y + t.pixels.region_h)) <= 1.0 + 1e-9);
    ++checked;
  }
  CHECK(checked > 20);
  const FrameTransform flipped = [] {
    for (int frame = 0;; ++frame) {
      const FrameTransform t = make_transform(90, 120, 64, 96, Augmentation::kDlc, 5, 2, frame, true);
      if (t.flipped && t.pixels.region_w > 0 && std::abs(std::atan2(t.m[3], t.m[4])) < 1e-12) return t;
    }
  }();
  // x -> 96 - x: the region's left edge is where the stored frame's right edge lands.
  CHECK(std::abs(flipped.m[0] * 120 + flipped.m[2] - flipped.pixels.region_x) <= 1.0 + 1e-9);

  // Dropout and equalization inside a region: outside it every pixel is as it was, and
  // inside the result is the steps on the region alone.
  const int h = 40, w = 50;
  PixelAugment plan;
  plan.dropout = true;
  plan.dropout_seed = 3;
  plan.equalize = true;
  plan.region_x = 7, plan.region_y = 5, plan.region_w = 30, plan.region_h = 20;
  Image img = noise_image(h, w, 1, 11);
  for (auto& v : img) v = static_cast<std::uint8_t>(100 + v / 8);  // low contrast
  Image region(static_cast<size_t>(30) * 20);
  for (int y = 0; y < 20; ++y)
    for (int x = 0; x < 30; ++x) region[static_cast<size_t>(y) * 30 + x] = img[static_cast<size_t>(y + 5) * w + x + 7];
  const Image before = img;
  PixelAugmenter(plan, h, w, 1).apply(img.data());
  PixelAugment alone = plan;
  alone.region_x = alone.region_y = alone.region_w = alone.region_h = 0;
  PixelAugmenter(alone, 20, 30, 1).apply(region.data());
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const bool inside = x >= 7 && x < 37 && y >= 5 && y < 25;
      const auto v = img[static_cast<size_t>(y) * w + x];
      if (inside) CHECK(v == region[static_cast<size_t>(y - 5) * 30 + x - 7]);
      else CHECK(v == before[static_cast<size_t>(y) * w + x]);
    }
  // Elastic keypoints: moved in the region's coordinates; one outside it is left alone.
  PixelAugment elastic;
  elastic.elastic = true;
  elastic.elastic_alpha = 8;
  elastic.elastic_seed = 4;
  elastic.region_x = 10, elastic.region_y = 8, elastic.region_w = 30, elastic.region_h = 24;
  PixelAugment elastic_alone = elastic;
  elastic_alone.region_x = elastic_alone.region_y = elastic_alone.region_w = elastic_alone.region_h = 0;
  float kp[4] = {25.5f, 20.25f, 3.f, 3.f}, local[2] = {15.5f, 12.25f};
  PixelAugmenter(elastic, h, w, 1).move_keypoints(kp, 2);
  PixelAugmenter(elastic_alone, 24, 30, 1).move_keypoints(local, 1);
  CHECK(kp[0] == Approx(local[0] + 10));
  CHECK(kp[1] == Approx(local[1] + 8));
  CHECK(kp[2] == 3.f);
  CHECK(kp[3] == 3.f);
}

TEST_CASE("coarse dropout per channel drops channels independently, otherwise together", "[data]") {
  const int h = 40, w = 40;
  PixelAugment plan;
  plan.dropout = true;
  int mixed_shared = 0, mixed_per_channel = 0;
  for (std::uint64_t seed = 1; seed <= 100; ++seed) {
    plan.dropout_seed = seed;
    for (bool per : {false, true}) {
      plan.dropout_per_channel = per;
      Image img(static_cast<size_t>(h) * w * 3, 90);
      PixelAugmenter(plan, h, w, 3).apply(img.data());
      for (size_t i = 0; i < img.size(); i += 3) {
        const bool mixed = !(img[i] == img[i + 1] && img[i] == img[i + 2]);
        (per ? mixed_per_channel : mixed_shared) += mixed;
      }
    }
  }
  CHECK(mixed_shared == 0);
  CHECK(mixed_per_channel > 0);
}

TEST_CASE("coarse salt and pepper replace blocks with bright / dark values", "[data]") {
  const int h = 64, w = 64;
  double salted = 0, peppered = 0, cells = 0;
  for (std::uint64_t seed = 1; seed <= 400; ++seed) {
    PixelAugment plan;
    plan.salt = true;
    plan.salt_seed = seed;
    plan.salt_size = 0.1;  // 6 x 6 grid: each cell ~10.7 x 10.7 pixels
    Image black(static_cast<size_t>(h) * w * 3, 0);
    PixelAugmenter(plan, h, w, 3).apply(black.data());
    PixelAugment pplan;
    pplan.pepper = true;
    pplan.pepper_seed = seed;
    pplan.pepper_size = 0.1;
    Image white(static_cast<size_t>(h) * w * 3, 255);
    PixelAugmenter(pplan, h, w, 3).apply(white.data());
    for (size_t i = 0; i < black.size(); i += 3) {
      REQUIRE((black[i] == black[i + 1] && black[i] == black[i + 2]));  // one value for all channels
      if (black[i] != 0) {
        CHECK(black[i] >= 128);  // salt only raises (to [128, 255])
        salted += 1;
      }
      if (white[i] != 255) {
        CHECK(white[i] <= 128);  // pepper only lowers (to [0, 128])
        peppered += 1;
      }
    }
    cells += 36;
  }
  const double cell_pixels = static_cast<double>(h) * w / 36;
  check_rate(salted / cell_pixels, cells, 0.01, 5.0);
  check_rate(peppered / cell_pixels, cells, 0.01, 5.0);

  // Replacement values follow imgaug's 0.5 +- |Beta(0.5, 0.5) - 0.5|: both ends are reached.
  KeyedRng rng(4);
  int lo = 255, hi = 0;
  for (int i = 0; i < 2000; ++i) {
    const int s = salt_value(rng), p = pepper_value(rng);
    REQUIRE(s >= 128);
    REQUIRE(s <= 255);
    REQUIRE(p >= 0);
    REQUIRE(p <= 128);
    lo = std::min(lo, p);
    hi = std::max(hi, s);
  }
  CHECK(lo <= 2);
  CHECK(hi >= 253);
}

namespace {
Image gaussian_dot(int h, int w, double px, double py) {
  Image img(static_cast<size_t>(h) * w, 0);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const double dx = x + 0.5 - px, dy = y + 0.5 - py;
      img[static_cast<size_t>(y) * w + x] = static_cast<std::uint8_t>(255.0 * std::exp(-(dx * dx + dy * dy) / 2.0));
    }
  return img;
}

// Intensity-weighted centroid in continuous coordinates.
std::pair<double, double> centroid(const Image& img, int h, int w) {
  double sum = 0, sx = 0, sy = 0;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const double v = img[static_cast<size_t>(y) * w + x];
      sum += v;
      sx += v * (x + 0.5);
      sy += v * (y + 0.5);
    }
  REQUIRE(sum > 0);
  return {sx / sum, sy / sum};
}
}  // namespace

TEST_CASE("the elastic transform moves a bright dot together with its keypoint", "[data]") {
  const int h = 96, w = 96;
  // Large, smooth displacements (sigma 15, alpha 150: several pixels) test the mechanism.
  int moved_far = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const double px = 30.0 + static_cast<double>(seed), py = 60.0 - static_cast<double>(seed);
    Image img = gaussian_dot(h, w, px, py);
    KeyedRng rng(seed);
    std::vector<float> dx, dy;
    elastic_field(h, w, 150.0, 15.0, rng, dx, dy);
    elastic_remap(img.data(), h, w, 1, dx, dy);
    float kp[2] = {static_cast<float>(px), static_cast<float>(py)};
    elastic_move_keypoints(dx, dy, h, w, kp, 1);
    REQUIRE_FALSE(std::isnan(kp[0]));
    const auto [cx, cy] = centroid(img, h, w);
    INFO("seed " << seed << " from " << px << "," << py << " keypoint " << kp[0] << "," << kp[1] << " dot " << cx << "," << cy);
    CHECK(cx == Approx(kp[0]).margin(1.0));
    CHECK(cy == Approx(kp[1]).margin(1.0));
    moved_far += std::hypot(kp[0] - px, kp[1] - py) > 2.0;
  }
  CHECK(moved_far >= 5);  // the test really exercises a displacement

  // dlc's own setting (sigma 5, alpha up to 10) through PixelAugmenter: sub-pixel moves,
  // and following them brings the keypoint closer to the dot than leaving it.
  double err_moved = 0, err_fixed = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const double px = 40.3 + static_cast<double>(seed) * 0.5, py = 55.7 - static_cast<double>(seed) * 0.5;
    Image img = gaussian_dot(h, w, px, py);
    PixelAugment plan;
    plan.elastic = true;
    plan.elastic_alpha = 10.0;
    plan.elastic_seed = seed;
    const PixelAugmenter aug(plan, h, w, 1);
    aug.apply(img.data());
    float kp[2] = {static_cast<float>(px), static_cast<float>(py)};
    aug.move_keypoints(kp, 1);
    const auto [cx, cy] = centroid(img, h, w);
    CHECK(cx == Approx(kp[0]).margin(0.3));
    CHECK(cy == Approx(kp[1]).margin(0.3));
    err_moved += std::hypot(cx - kp[0], cy - kp[1]);
    err_fixed += std::hypot(cx - px, cy - py);
  }
  INFO("mean error following the field " << err_moved / 40 << " px, staying " << err_fixed / 40 << " px");
  CHECK(err_moved < 0.5 * err_fixed);

  // A keypoint pushed out of the frame becomes NaN; NaN stays NaN.
  PixelAugment plan;
  plan.elastic = true;
  plan.elastic_alpha = 2000.0;
  int lost = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    plan.elastic_seed = seed;
    const PixelAugmenter aug(plan, 32, 32, 1);
    float kp[4] = {0.2f, 0.2f, std::nanf(""), 5.0f};
    aug.move_keypoints(kp, 2);
    CHECK(std::isnan(kp[2]));
    if (std::isnan(kp[0])) {
      CHECK(std::isnan(kp[1]));
      ++lost;
    } else {
      CHECK(kp[0] >= 0.0f);
      CHECK(kp[1] >= 0.0f);
    }
  }
  CHECK(lost > 0);
}

TEST_CASE("histogram equalization and CLAHE stretch a low-contrast image", "[data]") {
  const int h = 64, w = 64;
  Image img = noise_image(h, w, 3, 5);
  for (auto& v : img) v = static_cast<std::uint8_t>(100 + v % 21);  // 100 .. 120
  Image eq = img;
  equalize_histogram(eq.data(), h, w, 3);
  CHECK(*std::max_element(eq.begin(), eq.end()) == 255);
  CHECK(*std::min_element(eq.begin(), eq.end()) <= 20);
  Image cl = img;
  clahe(cl.data(), h, w, 3, 8.0, 4);
  const int span = *std::max_element(cl.begin(), cl.end()) - *std::min_element(cl.begin(), cl.end());
  CHECK(span > 60);  // input span is 20
  // Grayscale works too, and a constant image stays constant under equalization's order.
  Image gray(static_cast<size_t>(h) * w);
  for (size_t i = 0; i < gray.size(); ++i) gray[i] = static_cast<std::uint8_t>(50 + i % 10);
  equalize_histogram(gray.data(), h, w, 1);
  CHECK(*std::max_element(gray.begin(), gray.end()) == 255);
}

TEST_CASE("emboss keeps a constant image and alpha 0 is the identity", "[data]") {
  Image flat(16 * 16 * 3, 123);
  convolve(flat.data(), 16, 16, 3, emboss_kernel(0.5, 1.5), 3);
  CHECK(std::all_of(flat.begin(), flat.end(), [](std::uint8_t v) { return v == 123; }));
  const Image img = noise_image(16, 16, 1, 3);
  Image same = img;
  convolve(same.data(), 16, 16, 1, emboss_kernel(0.0, 1.0), 3);
  CHECK(same == img);
  Image changed = img;
  convolve(changed.data(), 16, 16, 1, emboss_kernel(0.5, 1.0), 3);
  CHECK(changed != img);
}

TEST_CASE("dlc draws each image-space step with lightning-pose's probability and range", "[data]") {
  const int n = 4000;
  double blur = 0, drop = 0, per = 0, salt = 0, pepper = 0, elastic = 0, eq = 0, cl = 0, emb = 0;
  for (int frame = 0; frame < n; ++frame) {
    const PixelAugment a = make_transform(64, 64, 32, 32, Augmentation::kDlc, 7, 2, frame).pixels;
    blur += a.motion_blur;
    drop += a.dropout;
    per += a.dropout_per_channel;
    salt += a.salt;
    pepper += a.pepper;
    elastic += a.elastic;
    eq += a.equalize;
    cl += a.clahe;
    emb += a.emboss;
    CHECK(a.blur_angle >= -90.0);
    CHECK(a.blur_angle <= 90.0);
    CHECK(a.salt_size >= 0.05);
    CHECK(a.salt_size <= 0.1);
    CHECK(a.pepper_size >= 0.05);
    CHECK(a.pepper_size <= 0.1);
    CHECK(a.elastic_alpha >= 0.0);
    CHECK(a.elastic_alpha <= 10.0);
    CHECK(a.clahe_clip >= 0.1);
    CHECK(a.clahe_clip <= 8.0);
    CHECK(a.clahe_tiles >= 3);
    CHECK(a.clahe_tiles <= 12);
    CHECK(a.emboss_alpha >= 0.0);
    CHECK(a.emboss_alpha <= 0.5);
    CHECK(a.emboss_strength >= 0.5);
    CHECK(a.emboss_strength <= 1.5);
  }
  check_rate(blur, n, 0.5);
  check_rate(drop, n, 0.5);
  check_rate(per, n, 0.5);
  check_rate(salt, n, 0.5);
  check_rate(pepper, n, 0.5);
  check_rate(elastic, n, 0.5);
  check_rate(eq, n, 0.1);
  check_rate(cl, n, 0.1);
  check_rate(emb, n, 0.1);
  // Resize-only draws nothing.
  CHECK_FALSE(make_transform(64, 64, 32, 32, Augmentation::kNone, 7, 2, 0).pixels.any());
}

TEST_CASE("context frames get the centre frame's image-space augmentation", "[data]") {
  testing::ScratchDir dir("augment_context");
  SynthOptions so;
  so.frames = 12;
  so.size = 48;
  so.videos = 1;
  write_synthetic_dataset(dir.file("v.h5"), so);
  const Dataset ds = Dataset::open({dir.file("v.h5")});
  LoaderOptions o;
  o.batch_size = 1;
  o.height = o.width = 32;
  o.augmentation = Augmentation::kDlc;
  o.seed = 21;
  Loader single(ds, o);
  o.context = true;
  Loader context(ds, o);
  const size_t frame_floats = 3 * 32 * 32;
  int with_pixels = 0;
  for (int epoch = 0; epoch < 6; ++epoch) {
    // Frame 0 of a video has context (0, 0, 0, 1, 2): the first three are the same
    // stored frame and must come out identical; the centre equals a plain load of
    // frame 0 with the same key.
    const FrameTransform t = make_transform(48, 48, 32, 32, Augmentation::kDlc, 21, epoch, 0);
    with_pixels += t.pixels.dropout || t.pixels.salt || t.pixels.pepper || t.pixels.moves_keypoints();
    context.start_epoch(epoch, {{0, true}});
    const Batch* cb = context.next();
    REQUIRE(cb);
    const std::vector<float> c(cb->images, cb->images + cb->image_floats());
    const std::vector<float> ckp = cb->keypoints;
    single.start_epoch(epoch, {{0, true}});
    const Batch* sb = single.next();
    REQUIRE(sb);
    INFO("epoch " << epoch);
    CHECK(std::memcmp(c.data(), c.data() + frame_floats, frame_floats * sizeof(float)) == 0);
    CHECK(std::memcmp(c.data(), c.data() + 2 * frame_floats, frame_floats * sizeof(float)) == 0);
    CHECK(std::memcmp(sb->images, c.data() + 2 * frame_floats, frame_floats * sizeof(float)) == 0);
    CHECK(std::memcmp(sb->keypoints.data(), ckp.data(), ckp.size() * sizeof(float)) == 0);
  }
  CHECK(with_pixels > 0);  // the check covered random masks, not only the affine part
}

TEST_CASE("image-space augmentation does not depend on the worker count", "[data]") {
  testing::ScratchDir dir("augment_workers");
  SynthOptions so;
  so.frames = 16;
  so.size = 48;
  so.videos = 2;
  write_synthetic_dataset(dir.file("v.h5"), so);
  const Dataset ds = Dataset::open({dir.file("v.h5")});
  LoaderOptions o;
  o.batch_size = 3;
  o.height = o.width = 40;
  o.augmentation = Augmentation::kDlc;
  o.seed = 5;
  o.context = true;
  std::vector<SampleRow> rows;
  int elastic = 0, masks = 0;
  for (std::int64_t f = 0; f < ds.size(); ++f) {
    rows.push_back({f, true});
    const PixelAugment a = make_transform(48, 48, 40, 40, Augmentation::kDlc, 5, 3, f).pixels;
    elastic += a.moves_keypoints();
    masks += a.dropout || a.salt || a.pepper;
  }
  CHECK(elastic > 0);
  CHECK(masks > 0);
  auto dump = [&](int workers) {
    o.num_workers = workers;
    Loader loader(ds, o);
    loader.start_epoch(3, rows);
    std::vector<float> images, keypoints;
    while (const Batch* b = loader.next()) {
      images.insert(images.end(), b->images, b->images + b->image_floats());
      keypoints.insert(keypoints.end(), b->keypoints.begin(), b->keypoints.end());
    }
    return std::make_pair(images, keypoints);
  };
  const auto serial = dump(0), threaded = dump(3);
  REQUIRE(serial.first.size() == threaded.first.size());
  CHECK(std::memcmp(serial.first.data(), threaded.first.data(), serial.first.size() * sizeof(float)) == 0);
  REQUIRE(serial.second.size() == threaded.second.size());
  CHECK(std::memcmp(serial.second.data(), threaded.second.data(), serial.second.size() * sizeof(float)) == 0);
}
