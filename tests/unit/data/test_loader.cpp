// Loader: augmentation geometry, determinism across worker counts, context frames.
#include <catch2/catch.hpp>

#include <opencv2/imgproc.hpp>  // cv::resize: imgaug's Resize as a reference

#include <array>    // std::array
#include <cmath>    // std::exp, std::isnan, std::abs
#include <cstring>  // std::memcmp
#include <string>   // std::to_string
#include <utility>  // std::pair
#include <vector>

#include "data/augment.hpp"
#include "data/context.hpp"
#include "data/dataset.hpp"
#include "data/format.hpp"   // DatasetWriter
#include "data/loader.hpp"
#include "data/sampler.hpp"
#include "data/synth.hpp"
#include "scratch_dir.hpp"

using namespace trainer::data;

TEST_CASE("plain resize scales keypoints like lightning-pose", "[data]") {
  const FrameTransform t = make_transform(100, 200, 50, 64, Augmentation::kNone, 0, 0, 0);
  const float in[4] = {10.0f, 20.0f, 199.5f, 99.5f};
  float out[4];
  transform_keypoints(t, in, out, 2, 50, 64);
  CHECK(out[0] == Approx(10.0 * 64 / 200));
  CHECK(out[1] == Approx(20.0 * 50 / 100));
  CHECK(out[2] == Approx(199.5 * 64 / 200));
  CHECK(out[3] == Approx(99.5 * 50 / 100));
}

TEST_CASE("an un-augmented frame is resized as imgaug's Resize does: OpenCV's bicubic resize", "[data]") {
  for (int c : {1, 3})
    for (auto [h, w, oh, ow] : {std::array{406, 396, 256, 256}, {90, 120, 64, 96}, {40, 30, 64, 64}}) {
      std::vector<std::uint8_t> img(std::size_t(h) * w * c);
      for (std::size_t i = 0; i < img.size(); ++i) img[i] = std::uint8_t((i * 7919 + (i / 13) * 31) % 256);
      const int type = c == 1 ? CV_8UC1 : CV_8UC3;
      cv::Mat want;
      cv::resize(cv::Mat(h, w, type, img.data()), want, cv::Size(ow, oh), 0, 0, cv::INTER_CUBIC);
      const FrameTransform t = make_transform(h, w, oh, ow, Augmentation::kNone, 0, 0, 0);
      CHECK(is_plain_resize(t, h, w, oh, ow));
      std::vector<std::uint8_t> out(std::size_t(oh) * ow * c);
      warp_image(t, img.data(), h, w, c, out.data(), oh, ow);
      CHECK(std::memcmp(out.data(), want.data, out.size()) == 0);
    }
  // Anything that moves the frame is one bilinear warp instead, not the resize: a
  // frame of dlc-top-down is turned, rotated, cropped or padded, or flipped, unless
  // none of them was drawn. A moved frame's keypoints land elsewhere than the
  // resize's, which tells the two apart without the transform's own terms.
  const float corner[2] = {30.0f, 20.0f};
  float resized[2], moved_to[2];
  transform_keypoints(make_transform(90, 120, 64, 96, Augmentation::kNone, 0, 0, 0), corner, resized, 1, 64, 96);
  int moved = 0, plain = 0;
  for (int frame = 0; frame < 40; ++frame) {
    const FrameTransform t = make_transform(90, 120, 64, 96, Augmentation::kDlcTopDown, 3, 0, frame, true);
    transform_keypoints(t, corner, moved_to, 1, 64, 96);
    const bool moves = !(moved_to[0] == resized[0] && moved_to[1] == resized[1]);  // NaN (pushed out) moves too
    CHECK(is_plain_resize(t, 90, 120, 64, 96) == !moves);
    moved += moves;
    plain += !moves;
  }
  CHECK(moved > 20);
  CHECK(plain > 0);
}

TEST_CASE("a keypoint transformed with the image lands on the same image content", "[data]") {
  const int h = 90, w = 120, oh = 64, ow = 96;
  int checked = 0;
  for (int frame = 0; frame < 60; ++frame) {
    // A bright Gaussian spot at a keypoint, on black.
    const double px = 20.0 + (frame * 37) % 80 + 0.3, py = 15.0 + (frame * 23) % 60 + 0.7;
    std::vector<std::uint8_t> img(static_cast<size_t>(h) * w);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const double dx = x + 0.5 - px, dy = y + 0.5 - py;
        img[static_cast<size_t>(y) * w + x] = static_cast<std::uint8_t>(255.0 * std::exp(-(dx * dx + dy * dy) / 18.0));
      }
    const FrameTransform t = make_transform(h, w, oh, ow, Augmentation::kDlc, 5, 1, frame);
    std::vector<std::uint8_t> out(static_cast<size_t>(oh) * ow);
    warp_image(t, img.data(), h, w, 1, out.data(), oh, ow);
    const float kp[2] = {static_cast<float>(px), static_cast<float>(py)};
    float moved[2];
    transform_keypoints(t, kp, moved, 1, oh, ow);
    if (std::isnan(moved[0])) continue;  // pushed out of the frame
    if (moved[0] < 8 || moved[1] < 8 || moved[0] > ow - 8 || moved[1] > oh - 8) continue;  // spot cut by the border
    // Intensity-weighted centroid near the moved keypoint, in continuous coordinates.
    double sum = 0, sx = 0, sy = 0;
    for (int y = 0; y < oh; ++y)
      for (int x = 0; x < ow; ++x) {
        const double v = out[static_cast<size_t>(y) * ow + x];
        sum += v;
        sx += v * (x + 0.5);
        sy += v * (y + 0.5);
      }
    REQUIRE(sum > 0);
    INFO("frame " << frame);
    CHECK(sx / sum == Approx(moved[0]).margin(0.25));
    CHECK(sy / sum == Approx(moved[1]).margin(0.25));
    ++checked;
  }
  CHECK(checked > 30);
}

TEST_CASE("dlc geometry is lightning-pose's: rotation p 0.4 within 25 degrees, CropAndPad p 0.4 with each side "
          "in 15 %, in the stored frame, then the resize",
          "[data]") {
  // M = Resize' * CropAndPad * Rotate: linear part diag(kx, ky) * R(theta), where
  // kx = (dst_w / W) / (1 + left + right) and ky likewise; without CropAndPad the
  // frame's centre stays the input's centre. Checked from the maps alone.
  const int h = 90, w = 120, oh = 64, ow = 96;
  const double base_x = double(ow) / w, base_y = double(oh) / h;
  const double pi = 3.141592653589793;
  int rotated = 0, cropped = 0, anisotropic = 0, grow = 0, shrink = 0;
  const int frames = 4000;
  for (int frame = 0; frame < frames; ++frame) {
    const FrameTransform t = make_transform(h, w, oh, ow, Augmentation::kDlc, 11, 3, frame);
    CHECK(t.contrast == 1.0f);  // no brightness / contrast in lightning-pose's labelled dlc
    CHECK(t.brightness == 0.0f);
    const double kx = std::hypot(t.m[0], t.m[1]), ky = std::hypot(t.m[3], t.m[4]);
    const double theta = std::atan2(t.m[3] / ky, t.m[4] / ky);
    CHECK(std::abs(t.m[0] / kx - t.m[4] / ky) < 1e-12);  // a rotation, no shear, in the stored frame's pixels
    CHECK(std::abs(theta) <= 25 * pi / 180 + 1e-12);
    if (std::abs(theta) > 1e-12) ++rotated;
    const double fx = base_x / kx, fy = base_y / ky;  // 1 + left + right, 1 + top + bottom
    CHECK(fx >= 0.7 - 1e-12);
    CHECK(fx <= 1.3 + 1e-12);
    CHECK(fy >= 0.7 - 1e-12);
    CHECK(fy <= 1.3 + 1e-12);
    const bool crop_pad = std::abs(fx - 1) > 1e-12 || std::abs(fy - 1) > 1e-12;
    if (crop_pad) {
      ++cropped;
      if (std::abs(fx - fy) > 1e-3) ++anisotropic;  // the sides are drawn one by one
      if (fx < 1) ++grow;                         // cropped: the content grows
      if (fx > 1) ++shrink;                       // padded: it shrinks
    } else {
      CHECK(t.m[0] * w / 2 + t.m[1] * h / 2 + t.m[2] == Approx(ow / 2.0));
      CHECK(t.m[3] * w / 2 + t.m[4] * h / 2 + t.m[5] == Approx(oh / 2.0));
    }
  }
  CHECK(rotated == Approx(0.4 * frames).margin(0.04 * frames));
  CHECK(cropped == Approx(0.4 * frames).margin(0.04 * frames));
  CHECK(anisotropic > cropped * 9 / 10);
  CHECK(grow > cropped / 3);
  CHECK(shrink > cropped / 3);
}

TEST_CASE("keypoints pushed out of the frame become NaN", "[data]") {
  FrameTransform t;
  t.m[2] = -50;  // shift left by 50 pixels
  const float in[6] = {10, 10, 70, 10, std::nanf(""), 3};
  float out[6];
  transform_keypoints(t, in, out, 3, 100, 100);
  CHECK(std::isnan(out[0]));
  CHECK(std::isnan(out[1]));
  CHECK(out[2] == 20.0f);
  CHECK(std::isnan(out[4]));
}

TEST_CASE("imgaug names", "[data]") {
  CHECK(parse_imgaug("default") == Augmentation::kNone);
  CHECK(parse_imgaug("dlc") == Augmentation::kDlc);
  CHECK(parse_imgaug("none") == Augmentation::kNone);
  CHECK(parse_imgaug("dlc-lr") == Augmentation::kDlcLr);
  CHECK(parse_imgaug("dlc-top-down") == Augmentation::kDlcTopDown);
  CHECK_THROWS_AS(parse_imgaug("heavy"), trainer::UserError);
}

namespace {
// All batches of one epoch, flattened, for comparison.
struct EpochDump {
  std::vector<float> images, keypoints;
  std::vector<std::int64_t> frames;
  std::vector<int> sizes;
};

EpochDump run_epoch(Loader& loader, const std::vector<std::int64_t>& frames, int epoch, int rank, int ranks) {
  SamplerOptions s;
  s.num_replicas = ranks;
  s.rank = rank;
  s.seed = 3;
  loader.start_epoch(epoch, distributed_rows(frames, s, epoch));
  EpochDump d;
  while (const Batch* b = loader.next()) {
    d.images.insert(d.images.end(), b->images, b->images + b->image_floats());
    d.keypoints.insert(d.keypoints.end(), b->keypoints.begin(), b->keypoints.end());
    d.frames.insert(d.frames.end(), b->frame_index.begin(), b->frame_index.end());
    d.sizes.push_back(b->size);
  }
  return d;
}

bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;  // NaN-safe, bitwise
}
}  // namespace

TEST_CASE("loader batches are identical for any worker count", "[data]") {
  testing::ScratchDir dir("loader");
  SynthOptions so;
  so.frames = 23;
  so.size = 64;
  write_synthetic_dataset(dir.file("s.h5"), so);
  const Dataset ds = Dataset::open({dir.file("s.h5")});
  std::vector<std::int64_t> frames;
  for (std::int64_t i = 0; i < ds.size(); ++i) frames.push_back(i);

  LoaderOptions o;
  o.batch_size = 4;
  o.height = 32;
  o.width = 64;
  o.augmentation = Augmentation::kDlc;
  o.seed = 11;
  int allocations = 0;
  o.allocator.allocate = [&](std::size_t n) { ++allocations; return ::operator new(n); };
  o.allocator.release = [&](void* p) { --allocations; ::operator delete(p); };
  {
    o.num_workers = 0;
    Loader serial(ds, o);
    CHECK(allocations == o.prefetch_batches + 1);  // memory comes from the caller's allocator
    const EpochDump ref0 = run_epoch(serial, frames, 0, 1, 2);
    const EpochDump ref1 = run_epoch(serial, frames, 1, 1, 2);
    CHECK(ref0.sizes == std::vector<int>{4, 4, 4});  // 12 rows on rank 1 of 2 (23 padded to 24)
    CHECK_FALSE(same_floats(ref0.images, ref1.images));  // a new epoch draws new augmentation
    for (int workers : {1, 2, 5}) {
      o.num_workers = workers;
      Loader parallel(ds, o);
      for (int epoch : {0, 1}) {
        const EpochDump got = run_epoch(parallel, frames, epoch, 1, 2);
        const EpochDump& ref = epoch == 0 ? ref0 : ref1;
        INFO("workers " << workers << " epoch " << epoch);
        CHECK(got.frames == ref.frames);
        CHECK(same_floats(got.images, ref.images));
        CHECK(same_floats(got.keypoints, ref.keypoints));
      }
    }
  }
  CHECK(allocations == 0);
}

TEST_CASE("loader handles drop_last, early epoch restarts and padded rows", "[data]") {
  testing::ScratchDir dir("loader2");
  SynthOptions so;
  so.frames = 10;
  so.size = 48;
  so.channels = 1;
  write_synthetic_dataset(dir.file("s.h5"), so);
  const Dataset ds = Dataset::open({dir.file("s.h5")});
  std::vector<std::int64_t> frames = {0, 1, 2, 3, 4, 5, 6};
  LoaderOptions o;
  o.batch_size = 3;
  o.height = o.width = 32;
  o.num_workers = 2;
  o.drop_last = true;
  Loader loader(ds, o);
  SamplerOptions s;
  s.shuffle = false;
  s.num_replicas = 3;
  s.rank = 2;  // 7 frames on 3 ranks: 3 rows each, rank 2 gets 2, 5 and the padding 0 (position 8)
  auto rows = distributed_rows(frames, s, 0);
  loader.start_epoch(0, rows);
  const Batch* b = loader.next();
  REQUIRE(b);
  CHECK(b->size == 3);
  CHECK(b->frame_index == std::vector<std::int64_t>{2, 5, 1});
  CHECK(b->is_real == std::vector<std::uint8_t>{1, 1, 0});
  CHECK(b->real_rows() == 2);
  CHECK(b->scale_x[0] == Approx(48.0 / 32.0));
  // Grayscale is replicated to three channels with ImageNet normalization per channel.
  const size_t plane = 32 * 32;
  const float v0 = b->images[100] * kImageNetStd[0] + kImageNetMean[0];
  const float v2 = b->images[2 * plane + 100] * kImageNetStd[2] + kImageNetMean[2];
  CHECK(v0 == Approx(v2).margin(1e-5));
  CHECK(loader.next() == nullptr);
  // Restart in the middle of an epoch.
  loader.start_epoch(1, std::vector<SampleRow>(rows.begin(), rows.end()));
  loader.start_epoch(2, {{0, true}, {1, true}, {2, true}, {3, true}, {4, true}, {5, true}, {6, true}});
  CHECK(loader.num_batches() == 2);  // 7 rows, drop_last: 2 full batches
  int n = 0;
  while (loader.next()) ++n;
  CHECK(n == 2);
}

TEST_CASE("context frames follow lightning-pose's rule: floored at 0, a missing neighbour is the centre", "[data]") {
  testing::ScratchDir dir("context");
  SynthOptions so;
  so.frames = 10;
  so.size = 48;
  so.videos = 2;  // frames 0..4 are video 0, 5..9 video 1
  write_synthetic_dataset(dir.file("v.h5"), so);
  const Dataset ds = Dataset::open({dir.file("v.h5")});
  REQUIRE(ds.has_video_info());
  const ContextIndex ctx(ds);
  using A = std::array<std::int64_t, 5>;
  CHECK(ctx.around(0) == A{0, 0, 0, 1, 2});
  CHECK(ctx.around(1) == A{0, 0, 1, 2, 3});
  CHECK(ctx.around(3) == A{1, 2, 3, 4, 3});  // frame 5 of video 0 does not exist: the centre
  CHECK(ctx.around(4) == A{2, 3, 4, 4, 4});
  CHECK(ctx.around(6) == A{5, 5, 6, 7, 8});
  CHECK(ctx.around(9) == A{7, 8, 9, 9, 9});
  CHECK(ctx.frames_without_neighbours() == 0);
  // Ten videos of one frame each: no frame has a neighbour (train warns for heatmap_mhcrnn).
  so.videos = 10;
  write_synthetic_dataset(dir.file("alone.h5"), so);
  const Dataset alone = Dataset::open({dir.file("alone.h5")});
  CHECK(ContextIndex(alone).frames_without_neighbours() == 10);

  // A context batch holds the same pixels as single frames, in order t-2 .. t+2.
  LoaderOptions o;
  o.batch_size = 1;
  o.height = o.width = 32;
  Loader single(ds, o);
  o.context = true;
  Loader context(ds, o);
  context.start_epoch(0, {{6, true}});
  const Batch* cb = context.next();
  REQUIRE(cb);
  REQUIRE(cb->context_frames == 5);
  const size_t frame_floats = 3 * 32 * 32;
  const A want = ctx.around(6);
  for (int j = 0; j < 5; ++j) {
    single.start_epoch(0, {{want[static_cast<size_t>(j)], true}});
    const Batch* sb = single.next();
    REQUIRE(sb);
    CHECK(std::memcmp(sb->images, cb->images + j * frame_floats, frame_floats * sizeof(float)) == 0);
  }
  CHECK(cb->frame_index[0] == 6);

  write_synthetic_dataset(dir.file("novideo.h5"), SynthOptions{});
  const Dataset plain = Dataset::open({dir.file("novideo.h5")});
  CHECK_THROWS_AS(ContextIndex(plain), trainer::UserError);
}

TEST_CASE("deflate-compressed frames read back identically, from several threads", "[data]") {
  testing::ScratchDir dir("deflate");
  SynthOptions so;
  so.frames = 12;
  so.size = 64;
  write_synthetic_dataset(dir.file("plain.h5"), so);
  so.deflate_level = 6;
  write_synthetic_dataset(dir.file("packed.h5"), so);
  const Dataset plain = Dataset::open({dir.file("plain.h5")});
  const Dataset packed = Dataset::open({dir.file("packed.h5")});
  std::vector<std::uint8_t> a(plain.frame_bytes()), b(packed.frame_bytes());
  for (std::int64_t i = 0; i < plain.size(); ++i) {
    plain.read_image(i, a.data());
    packed.read_image(i, b.data());
    REQUIRE(a == b);
    CHECK(a == render_synth_frame(so, i).image);
  }
  LoaderOptions o;
  o.batch_size = 5;
  o.height = o.width = 32;
  o.augmentation = Augmentation::kDlc;
  std::vector<std::int64_t> frames;
  for (std::int64_t i = 0; i < plain.size(); ++i) frames.push_back(i);
  Loader reference(plain, o);
  o.num_workers = 3;
  Loader threaded(packed, o);
  const EpochDump x = run_epoch(reference, frames, 0, 0, 1), y = run_epoch(threaded, frames, 0, 0, 1);
  CHECK(same_floats(x.images, y.images));
}

// lightning-pose's dlc-lr / dlc-top-down: imgaug's Rot90 (keep_size) before the dlc
// pipeline. With the same seed the dlc draws are the same, so each frame's transform
// is dlc's composed with one quarter turn of the source frame, stretched back to its
// size: T(p) == T_dlc(Q(p)).
TEST_CASE("dlc-lr and dlc-top-down: dlc after a random quarter turn of the frame", "[data]") {
  const int h = 90, w = 120, oh = 64, ow = 96;
  const double W = w, H = h;
  auto turned = [&](int k, double x, double y) -> std::pair<double, double> {
    switch (k) {
      case 1: return {(H - y) * W / H, x * H / W};
      case 2: return {W - x, H - y};
      case 3: return {y * W / H, (W - x) * H / W};
      default: return {x, y};
    }
  };
  auto apply = [](const FrameTransform& t, double x, double y) {
    return std::pair<double, double>{t.m[0] * x + t.m[1] * y + t.m[2], t.m[3] * x + t.m[4] * y + t.m[5]};
  };
  const double probes[3][2] = {{10.5, 20.25}, {100.0, 80.0}, {60.0, 3.0}};
  for (const auto aug : {Augmentation::kDlcLr, Augmentation::kDlcTopDown}) {
    int seen[4] = {0, 0, 0, 0};
    for (int frame = 0; frame < 200; ++frame) {
      const FrameTransform dlc = make_transform(h, w, oh, ow, Augmentation::kDlc, 7, 2, frame);
      const FrameTransform t = make_transform(h, w, oh, ow, aug, 7, 2, frame);
      CHECK(t.contrast == dlc.contrast);
      CHECK(t.brightness == dlc.brightness);
      int match = -1;
      for (int k = 0; k < 4 && match < 0; ++k) {
        bool all = true;
        for (const auto& p : probes) {
          const auto q = turned(k, p[0], p[1]);
          const auto a = apply(t, p[0], p[1]), b = apply(dlc, q.first, q.second);
          all = all && std::abs(a.first - b.first) < 1e-9 && std::abs(a.second - b.second) < 1e-9;
        }
        if (all) match = k;
      }
      REQUIRE(match >= 0);
      ++seen[match];
    }
    INFO("turns 0/1/2/3: " << seen[0] << " " << seen[1] << " " << seen[2] << " " << seen[3]);
    if (aug == Augmentation::kDlcLr) {
      CHECK((seen[1] == 0 && seen[3] == 0));
      CHECK((seen[0] > 60 && seen[2] > 60));
    } else {
      for (int k = 0; k < 4; ++k) CHECK(seen[k] > 25);
    }
  }
}

TEST_CASE("batches say which keypoints have no label in the data, apart from those augmentation pushed out",
          "[data]") {
  testing::ScratchDir dir("loader_missing");
  DatasetShape shape;
  shape.num_frames = 12;
  shape.height = shape.width = 32;
  shape.channels = 1;
  shape.keypoint_names = {"a", "b", "c"};
  {
    DatasetWriter writer(dir.file("m.h5"), shape, WriterOptions{});
    std::vector<std::uint8_t> image(32 * 32, 100);
    for (int i = 0; i < 12; ++i) {
      // b is unlabeled in even frames; c sits at the corner, where rotations push it out.
      const float kp[6] = {16.f, 16.f, i % 2 ? 10.f : NAN, i % 2 ? 12.f : NAN, 0.5f, 0.5f};
      writer.write_frame(i, image.data(), kp, "f" + std::to_string(i) + ".png");
    }
    writer.finish();
  }
  const Dataset ds = Dataset::open({dir.file("m.h5")});
  LoaderOptions o;
  o.batch_size = 4;
  o.height = o.width = 32;
  o.augmentation = Augmentation::kDlcTopDown;
  o.num_workers = 0;
  o.allocator.allocate = [](std::size_t n) { return ::operator new(n); };
  o.allocator.release = [](void* p) { ::operator delete(p); };
  Loader loader(ds, o);
  std::vector<std::int64_t> frames;
  for (std::int64_t i = 0; i < 12; ++i) frames.push_back(i);
  int pushed_out = 0;
  for (int epoch = 0; epoch < 4; ++epoch) {
    SamplerOptions so;
    so.num_replicas = 1;
    so.rank = 0;
    loader.start_epoch(epoch, distributed_rows(frames, so, epoch));
    while (const Batch* b = loader.next()) {
      REQUIRE(b->missing.size() == std::size_t(b->size) * 3);
      for (int r = 0; r < b->size; ++r) {
        const bool even = b->frame_index[std::size_t(r)] % 2 == 0;
        CHECK(b->missing[std::size_t(r) * 3 + 0] == 0);
        CHECK(b->missing[std::size_t(r) * 3 + 1] == (even ? 1 : 0));
        CHECK(b->missing[std::size_t(r) * 3 + 2] == 0);  // labeled, even when pushed out of the frame
        if (std::isnan(b->keypoints[(std::size_t(r) * 3 + 2) * 2])) ++pushed_out;
      }
    }
  }
  CHECK(pushed_out > 0);  // the case the flag tells apart did occur
}

TEST_CASE("imgaug_hflip: half the frames mirrored, _left/_right keypoints swapped", "[data]") {
  CHECK(hflip_partners({"nose", "paw_left", "tail", "paw_right"}) == std::vector<int>{0, 3, 2, 1});
  CHECK(hflip_partners({"a", "b"}) == std::vector<int>{0, 1});
  CHECK_THROWS_AS(hflip_partners({"ear_left", "ear_rght"}), trainer::UserError);
  // The flip is the mirror of the same transform: T_flip(p).x = W - T(p).x.
  int flipped = 0;
  for (int frame = 0; frame < 100; ++frame) {
    const FrameTransform plain = make_transform(40, 60, 32, 48, Augmentation::kDlc, 3, 1, frame);
    const FrameTransform t = make_transform(40, 60, 32, 48, Augmentation::kDlc, 3, 1, frame, true);
    if (!t.flipped) {
      for (int i = 0; i < 6; ++i) CHECK(t.m[i] == plain.m[i]);
      continue;
    }
    ++flipped;
    const double x = 17.5, y = 9.25;
    CHECK(t.m[0] * x + t.m[1] * y + t.m[2] == Approx(48 - (plain.m[0] * x + plain.m[1] * y + plain.m[2])));
    CHECK(t.m[3] * x + t.m[4] * y + t.m[5] == Approx(plain.m[3] * x + plain.m[4] * y + plain.m[5]));
    CHECK(t.contrast == plain.contrast);  // the other draws do not change
  }
  CHECK(flipped > 30);
  CHECK(flipped < 70);

  // In the loader: a flipped row carries the left label at the right index.
  testing::ScratchDir dir("loader_hflip");
  DatasetShape shape;
  shape.num_frames = 8;
  shape.height = shape.width = 32;
  shape.channels = 1;
  shape.keypoint_names = {"paw_left", "nose", "paw_right"};
  {
    DatasetWriter writer(dir.file("h.h5"), shape, WriterOptions{});
    std::vector<std::uint8_t> image(32 * 32, 100);
    const float kp[6] = {8.f, 10.f, 16.f, 16.f, NAN, NAN};  // the right paw is unlabeled
    for (int i = 0; i < 8; ++i) writer.write_frame(i, image.data(), kp, "f" + std::to_string(i) + ".png");
    writer.finish();
  }
  const Dataset ds = Dataset::open({dir.file("h.h5")});
  LoaderOptions o;
  o.batch_size = 8;
  o.height = o.width = 32;
  o.hflip = true;
  o.seed = 5;
  o.allocator.allocate = [](std::size_t n) { return ::operator new(n); };
  o.allocator.release = [](void* p) { ::operator delete(p); };
  Loader loader(ds, o);
  std::vector<std::int64_t> frames = {0, 1, 2, 3, 4, 5, 6, 7};
  SamplerOptions so;
  so.num_replicas = 1;
  loader.start_epoch(0, distributed_rows(frames, so, 0));
  const Batch* b = loader.next();
  REQUIRE(b != nullptr);
  int mirrored = 0;
  for (int r = 0; r < b->size; ++r) {
    const float* kp = b->keypoints.data() + r * 6;
    const std::uint8_t* missing = b->missing.data() + r * 3;
    if (std::isnan(kp[0])) {  // flipped: the left slot holds the (unlabeled) right paw
      ++mirrored;
      CHECK(missing[0] == 1);
      CHECK(missing[2] == 0);
      CHECK(kp[4] == Approx(32 - 8.f));  // the left paw, mirrored, now at the right index
      CHECK(kp[5] == Approx(10.f));
      CHECK(kp[2] == Approx(16.f));      // nose at x = 16 mirrors onto itself
    } else {
      CHECK(missing[2] == 1);
      CHECK(kp[0] == Approx(8.f));
    }
  }
  CHECK(mirrored > 0);
  CHECK(mirrored < b->size);
}
