// lightning-pose's video-frame resize (DALI's fn.resize, linear, antialiased:
// data/video_resize.hpp) and the frames' way to the network input
// (data/video_frame_input.hpp).
#include <catch2/catch.hpp>

#include <opencv2/imgproc.hpp>  // cv::resize: bilinear enlargement as a reference

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "data/augment.hpp"            // kImageNetMean, kImageNetStd
#include "data/unlabeled_augment.hpp"  // UnlabeledAugment
#include "data/video_frame_input.hpp"  // VideoFrameInput
#include "data/video_resize.hpp"       // VideoResize

using trainer::data::VideoResize;

namespace {
// The definition, pixel by pixel in double: output (y, x) is the normalized sum over
// every source pixel of tri_y * tri_x, the triangles of half-width max(1, in / out)
// centred on (x + 0.5) in / out - 0.5, each source index clamped to the frame.
double reference(const std::vector<std::uint8_t>& src, int h, int w, int c, int out_h, int out_w, int y, int x,
                 int ch) {
  auto axis = [](int in, int out, int i, std::vector<std::pair<int, double>>& taps) {
    const double scale = double(in) / out, r = std::max(1.0, scale), s = (i + 0.5) * scale - 0.5;
    double sum = 0;
    for (int j = int(std::floor(s - r)) - 1; j <= int(std::ceil(s + r)) + 1; ++j) {
      const double wj = std::max(0.0, 1.0 - std::fabs(j - s) / r);
      if (wj > 0) taps.push_back({std::clamp(j, 0, in - 1), wj}), sum += wj;
    }
    for (auto& t : taps) t.second /= sum;
  };
  std::vector<std::pair<int, double>> ty, tx;
  axis(h, out_h, y, ty);
  axis(w, out_w, x, tx);
  double v = 0;
  for (auto [sy, wy] : ty)
    for (auto [sx, wx] : tx) v += wy * wx * src[(std::size_t(sy) * w + sx) * c + ch];
  return v;
}

std::vector<std::uint8_t> pattern(int h, int w, int c) {
  std::vector<std::uint8_t> img(std::size_t(h) * w * c);
  for (std::size_t i = 0; i < img.size(); ++i) img[i] = std::uint8_t((i * 7919 + (i / 13) * 31) % 256);
  return img;
}
}  // namespace

TEST_CASE("video resize: the triangle's taps sum to one and halve to 1/8 3/8 3/8 1/8", "[data]") {
  for (auto [in, out] : {std::pair{1280, 256}, {406, 256}, {396, 256}, {64, 256}, {257, 256}, {3, 1}}) {
    const auto t = VideoResize::plan_axis(in, out);
    REQUIRE(t.index.size() == std::size_t(out) * t.support);
    for (int i = 0; i < out; ++i) {
      double sum = 0;
      for (int k = 0; k < t.support; ++k) {
        const auto at = std::size_t(i) * t.support + k;
        CHECK(t.index[at] >= 0);
        CHECK(t.index[at] < in);
        sum += t.weight[at];
      }
      CHECK(sum == Approx(1.0).margin(1e-6));
    }
  }
  // Halving: source pixels 2i - 1 .. 2i + 2 at distances 1.5, 0.5, 0.5, 1.5 of a
  // triangle of half-width 2 (torch's bilinear antialias and PIL give the same).
  const auto t = VideoResize::plan_axis(16, 8);
  REQUIRE(t.support == 4);
  const int i = 3;
  for (int k = 0; k < 4; ++k) {
    CHECK(t.index[std::size_t(i) * 4 + k] == 2 * i - 1 + k);
    CHECK(t.weight[std::size_t(i) * 4 + k] == Approx(k == 0 || k == 3 ? 0.125 : 0.375));
  }
}

TEST_CASE("video resize: every output pixel is the definition's, shrinking and enlarging, 1 and 3 channels", "[data]") {
  VideoResize resize;
  for (int c : {1, 3})
    for (auto [h, w, oh, ow] : {std::array{103, 161, 32, 24}, {20, 30, 48, 40}, {40, 33, 16, 50}, {9, 9, 9, 9}}) {
      const auto src = pattern(h, w, c);
      const float* out = resize.run(src.data(), h, w, c, oh, ow);
      double worst = 0;
      for (int y = 0; y < oh; ++y)
        for (int x = 0; x < ow; ++x)
          for (int ch = 0; ch < c; ++ch)
            worst = std::max(worst, std::fabs(out[(std::size_t(y) * ow + x) * c + ch] -
                                              reference(src, h, w, c, oh, ow, y, x, ch)));
      INFO(h << "x" << w << " -> " << oh << "x" << ow << ", " << c << " channels");
      CHECK(worst < 2e-3);  // float sums of values up to 255
    }
}

TEST_CASE("video resize: enlarging is bilinear, the same size is a copy", "[data]") {
  const int h = 21, w = 17, oh = 50, ow = 45;
  const auto src = pattern(h, w, 1);
  VideoResize resize;
  const float* out = resize.run(src.data(), h, w, 1, oh, ow);
  cv::Mat in(h, w, CV_8UC1, const_cast<std::uint8_t*>(src.data())), in_f, want;
  in.convertTo(in_f, CV_32F);
  cv::resize(in_f, want, cv::Size(ow, oh), 0, 0, cv::INTER_LINEAR);
  double worst = 0;
  for (int y = 0; y < oh; ++y)
    for (int x = 0; x < ow; ++x) worst = std::max(worst, double(std::fabs(out[y * ow + x] - want.at<float>(y, x))));
  CHECK(worst < 0.05);  // OpenCV's bilinear weights are fixed-point (1/2048)
  const float* same = resize.run(src.data(), h, w, 1, h, w);
  for (std::size_t i = 0; i < src.size(); ++i) CHECK(same[i] == float(src[i]));
}

TEST_CASE("video resize: a shrink averages what a bilinear warp would alias", "[data]") {
  // One-pixel stripes, 0 and 255, shrunk five times (a 1280-wide camera to 256):
  // every output pixel covers both kinds, so all are near the mean. A bilinear warp
  // reads 2 of the 5 columns and gives 0, 255 or anything between.
  const int h = 10, w = 1280, ow = 256;
  std::vector<std::uint8_t> stripes(std::size_t(h) * w);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) stripes[std::size_t(y) * w + x] = x % 2 ? 255 : 0;
  VideoResize resize;
  const float* out = resize.run(stripes.data(), h, w, 1, 2, ow);
  for (int x = 1; x < ow - 1; ++x) {
    CHECK(out[x] > 100.f);
    CHECK(out[x] < 155.f);
  }
}

TEST_CASE("video frame input: ImageNet planes of the resized floats; an identity augmentation is the plain frame",
          "[data]") {
  const int h = 40, w = 52, oh = 16, ow = 20;
  for (int c : {1, 3}) {
    const auto src = pattern(h, w, c);
    std::vector<float> plain(3 * oh * ow), augmented(plain.size());
    trainer::data::VideoFrameInput input;
    input.plain(src.data(), h, w, c, oh, ow, plain.data());
    VideoResize resize;
    const float* r = resize.run(src.data(), h, w, c, oh, ow);
    for (int ch = 0; ch < 3; ++ch)
      for (int i = 0; i < oh * ow; ++i) {
        const float v = r[std::size_t(i) * c + (c == 1 ? 0 : ch)];
        const float want = (v / 255.0f - trainer::data::kImageNetMean[ch]) / trainer::data::kImageNetStd[ch];
        CHECK(plain[std::size_t(ch) * oh * ow + i] == Approx(want).margin(1e-5));
      }
    trainer::data::UnlabeledAugment identity;  // no warp, gain 1, no noise
    input.augmented(src.data(), h, w, c, oh, ow, identity, 1, 0, 0, 0, augmented.data());
    double worst = 0;
    for (std::size_t i = 0; i < plain.size(); ++i) worst = std::max(worst, double(std::fabs(plain[i] - augmented[i])));
    CHECK(worst < 1e-3);  // warpAffine's identity in float: its 1/32-pixel table only
  }
}
