// UnlabeledFrames: the windows a step trains on (shuffled per epoch, the same on
// every rank, each rank its own contiguous share), frame-exact decoding, restarts
// mid-epoch, and the errors for videos that cannot give a sequence.
#include <catch2/catch.hpp>

#include <opencv2/imgproc.hpp>  // cv::rectangle
#include <algorithm>            // std::min, std::max
#include <cstdlib>              // std::getenv
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "data/augment.hpp"           // Augmentation
#include "data/media_loader.hpp"      // media_api: the video encoder
#include "data/unlabeled_frames.hpp"  // UnlabeledFrames
#include "data/video_batches.hpp"     // VideoBatches
#include "data/video_frame_input.hpp"  // VideoFrameInput
#include "data/video_reader.hpp"      // VideoReader
#include "scratch_dir.hpp"            // ScratchDir
#include "util/error.hpp"             // UserError, SystemError

using trainer::UserError;
using trainer::data::Batch;
using trainer::data::UnlabeledFrames;
using trainer::data::UnlabeledOptions;
using trainer::data::testing::ScratchDir;

namespace {
// MJPG: every frame a keyframe; mp4v (MPEG-4 part 2): a keyframe every 12 frames.
void write_video(const std::string& path, int frames, int w = 48, int h = 32, const char* codec = "MJPG") {
  const auto writer = trainer::data::media_api("writing a test video").make_encoder();
  REQUIRE(writer->open(path, 25, w, h, codec));
  for (int i = 0; i < frames; ++i) {
    cv::Mat img(h, w, CV_8UC3, cv::Scalar(20, 40, 60));
    cv::rectangle(img, cv::Rect((i * 3) % (w - 8), 4, 8, h - 8), cv::Scalar(255, 200, 10 * (i % 20)), cv::FILLED);
    REQUIRE(writer->write(img));
  }
  writer->close();
}

UnlabeledOptions options(const std::vector<std::string>& videos, int per_rank, int rank, int world) {
  UnlabeledOptions o;
  o.videos = videos;
  o.frames_per_rank = per_rank;
  o.rank = rank;
  o.world_size = world;
  o.height = 32;
  o.width = 32;
  o.num_keypoints = 2;
  o.seed = 7;
  o.num_workers = 2;
  return o;
}

// The network input of frame `index` of `path`, un-augmented, decoded on its own.
std::vector<float> expected_frame(const std::string& path, long index, int channels = 3) {
  trainer::data::VideoReader reader(path);
  std::vector<std::uint8_t> raw;
  reader.read(index, channels, raw);
  std::vector<float> out(3 * 32 * 32);
  trainer::data::VideoFrameInput().plain(raw.data(), reader.info().height, reader.info().width, channels, 32, 32,
                                         out.data());
  return out;
}
// lightning-pose's example video, or "" after a visible skip when it is absent.
std::string mirror_mouse_video() {
  const char* mm = std::getenv("MIRROR_MOUSE_DIR");
  const std::string video = ((mm ? std::filesystem::path(mm)
                                  : std::filesystem::path(TRAINER_SOURCE_DIR) / ".." / "shared" / "data" /
                                        "mirror-mouse-example") /
                             "videos" / "test_vid.mp4")
                                .string();
  if (std::filesystem::exists(video)) return video;
  WARN("SKIP: " << video << " not found (set MIRROR_MOUSE_DIR)");
  CHECK(true);
  return "";
}
}  // namespace

TEST_CASE("unlabelled frames: every rank draws the same window and decodes its own share", "[data][media]") {
  ScratchDir dir("unlabeled_frames");
  const std::string a = dir.file("a.mp4"), b = dir.file("b.avi");
  write_video(a, 37, 48, 32, "mp4v");  // 4 windows of 8 (frames 32..36 are in none)
  write_video(b, 16);  // 2 windows
  UnlabeledFrames rank0(options({a, b}, 4, 0, 2)), rank1(options({a, b}, 4, 1, 2));
  REQUIRE(rank0.sequence_frames() == 8);
  REQUIRE(rank0.windows() == 6);
  for (int epoch : {0, 1}) {
    std::set<std::pair<int, long>> seen;
    for (long step = 0; step < 6; ++step) {
      const auto w = rank0.window(epoch, step);
      CHECK(w.first % 8 == 0);
      seen.insert({w.video, w.first});
      CHECK(rank1.window(epoch, step).first == w.first);  // the same on every rank
    }
    CHECK(seen.size() == 6);  // an epoch visits every window once
    CHECK(rank0.window(epoch, 6).first == rank0.window(epoch, 0).first);  // then wraps around
  }
  // Runs of consecutive windows (one seek per run): the windows that start in one
  // group of pictures follow each other in order. Video a is mp4v with a keyframe
  // every 12 frames, so its windows at 0 and 8 form one run, 16 and 24 one each; b is
  // MJPG, every frame a keyframe, so each of its windows is a run (a seek there
  // decodes nothing in vain).
  REQUIRE(trainer::data::keyframe_positions(a) == std::vector<long>{0, 12, 24, 36});
  REQUIRE(trainer::data::keyframe_positions(b).size() == 16);
  for (int epoch : {0, 1}) {
    long at = 0;
    while (!(rank0.window(epoch, at).video == 0 && rank0.window(epoch, at).first == 0)) ++at;
    CHECK(rank0.window(epoch, at + 1).video == 0);
    CHECK(rank0.window(epoch, at + 1).first == 8);
  }
  bool reshuffled = false;
  for (int epoch = 1; epoch < 10; ++epoch)
    reshuffled |= rank0.window(0, 0).video != rank0.window(epoch, 0).video;
  CHECK(reshuffled);

  rank0.start_epoch(1, 0);
  rank1.start_epoch(1, 0);
  for (long step = 0; step < 3; ++step) {
    const auto w = rank0.window(1, step);
    const std::string& path = w.video == 0 ? a : b;
    for (UnlabeledFrames* r : {&rank0, &rank1}) {
      const Batch& batch = r->next();
      REQUIRE(batch.size == 4);
      const long first = w.first + (r == &rank1 ? 4 : 0);
      for (int i = 0; i < 4; ++i) {
        CHECK(batch.frame_index[static_cast<std::size_t>(i)] == first + i);
        const auto want = expected_frame(path, first + i);
        const std::vector<float> got(batch.images + std::size_t(i) * want.size(),
                                     batch.images + std::size_t(i + 1) * want.size());
        CHECK(got == want);
      }
      CHECK(batch.scale_x[0] == Approx(48.0 / 32));
      CHECK(batch.scale_y[0] == Approx(1.0));
    }
  }
  // A restart mid-epoch (a resumed run) continues with that step's window.
  rank0.start_epoch(1, 2);
  const Batch& again = rank0.next();
  CHECK(again.frame_index[0] == rank0.window(1, 2).first);
}

TEST_CASE("unlabelled frames of a grayscale dataset are decoded as gray", "[data][media]") {
  ScratchDir dir("unlabeled_gray");
  const std::string a = dir.file("a.avi");
  write_video(a, 16);
  UnlabeledOptions o = options({a}, 8, 0, 1);
  o.channels = 1;
  UnlabeledFrames frames(o);
  frames.start_epoch(0, 0);
  const Batch& batch = frames.next();
  const auto want = expected_frame(a, batch.frame_index[0], 1);
  const std::vector<float> got(batch.images, batch.images + want.size());
  CHECK(got == want);
  CHECK(got != expected_frame(a, batch.frame_index[0], 3));  // the coloured rectangle differs in gray
  o.channels = 2;
  CHECK_THROWS_AS(UnlabeledFrames(o), trainer::SystemError);
}

TEST_CASE("unlabelled frames: a video shorter than a sequence, or none, is a user error", "[data][media]") {
  ScratchDir dir("unlabeled_frames_bad");
  const std::string tiny = dir.file("tiny.avi");
  write_video(tiny, 5);
  CHECK_THROWS_WITH(UnlabeledFrames(options({tiny}, 4, 0, 2)),
                    Catch::Contains("has 5 frames, fewer than one unlabelled sequence of 8 frames"));
  CHECK_THROWS_AS(UnlabeledFrames(options({}, 4, 0, 1)), UserError);
  CHECK_THROWS_AS(UnlabeledFrames(options({dir.file("missing.avi")}, 4, 0, 1)), UserError);
}

TEST_CASE("unlabelled context batches (heatmap_mhcrnn): one sequence of rows + 4 frames, the ranks' centre frames "
          "in turn",
          "[data][media]") {
  ScratchDir dir("unlabeled_context");
  const std::string a = dir.file("a.avi");
  write_video(a, 20);
  // B = 8 over 2 ranks: ceil((8 - 4) / 2) + 4 = 6 frames, 2 rows per rank; windows of 8.
  UnlabeledOptions o0 = options({a}, 6, 0, 2), o1 = options({a}, 6, 1, 2);
  o0.context = o1.context = true;
  UnlabeledFrames rank0(o0), rank1(o1);
  REQUIRE(rank0.sequence_frames() == 8);
  REQUIRE(rank0.rows_per_rank() == 2);
  REQUIRE(rank0.windows() == 2);  // frames 0..7 and 8..15
  rank0.start_epoch(0, 0);
  rank1.start_epoch(0, 0);
  const long first = rank0.window(0, 0).first;
  const std::size_t frame = 3 * 32 * 32;
  for (UnlabeledFrames* r : {&rank0, &rank1}) {
    const Batch& batch = r->next();
    REQUIRE(batch.size == 2);
    REQUIRE(batch.context_frames == 5);
    REQUIRE(batch.sliding_context);  // each frame once: the backbone sees it once, as lightning-pose's
    CHECK(batch.image_count() == 2 + 4);
    CHECK(batch.image_floats() == 6 * frame);
    const long centre0 = first + 2 + (r == &rank1 ? 2 : 0);  // rank 1 goes on where rank 0 stopped
    for (int row = 0; row < 2; ++row) {
      CHECK(batch.frame_index[static_cast<std::size_t>(row)] == centre0 + row);
      for (int d = 0; d < 5; ++d) {  // row's frame d is the sequence's frame row + d
        const auto want = expected_frame(a, centre0 + row + d - 2);
        const float* at = batch.images + (static_cast<std::size_t>(row) + static_cast<std::size_t>(d)) * frame;
        CHECK(std::vector<float>(at, at + frame) == want);
      }
    }
  }
  UnlabeledOptions too_few = options({a}, 4, 0, 1);
  too_few.context = true;
  CHECK_THROWS_AS(UnlabeledFrames(too_few), UserError);
}

TEST_CASE("unlabelled frames with imgaug dlc: one augmentation per sequence, the same on every rank's share",
          "[data][media]") {
  ScratchDir dir("unlabeled_augmented");
  const std::string a = dir.file("a.avi");
  write_video(a, 16);
  UnlabeledOptions one = options({a}, 8, 0, 1);
  one.imgaug = trainer::data::Augmentation::kDlc;
  UnlabeledOptions half0 = options({a}, 4, 0, 2), half1 = options({a}, 4, 1, 2);
  half0.imgaug = half1.imgaug = trainer::data::Augmentation::kDlc;
  UnlabeledFrames whole(one), rank0(half0), rank1(half1);
  for (UnlabeledFrames* f : {&whole, &rank0, &rank1}) f->start_epoch(3, 0);
  for (int step = 0; step < 2; ++step) {
    const Batch& w = whole.next();
    const Batch& r0 = rank0.next();
    const Batch& r1 = rank1.next();
    REQUIRE(w.keypoint_unwarp.size() == 6);
    CHECK(r0.keypoint_unwarp == w.keypoint_unwarp);
    CHECK(r1.keypoint_unwarp == w.keypoint_unwarp);
    const std::size_t frame = 3 * 32 * 32;
    // The two ranks' frames are the one-rank sequence's, noise included.
    CHECK(std::vector<float>(r0.images, r0.images + 4 * frame) == std::vector<float>(w.images, w.images + 4 * frame));
    CHECK(std::vector<float>(r1.images, r1.images + 4 * frame) ==
          std::vector<float>(w.images + 4 * frame, w.images + 8 * frame));
    // ... and not the un-augmented frames.
    const auto plain = expected_frame(a, w.frame_index[0]);
    CHECK(std::vector<float>(w.images, w.images + frame) != plain);
  }
  // imgaug default (and dlc-lr, which lightning-pose's DALI pipeline does not
  // augment): resize only.
  UnlabeledOptions lr = one;
  lr.imgaug = trainer::data::Augmentation::kDlcLr;
  UnlabeledFrames plain(lr);
  plain.start_epoch(3, 0);
  const Batch& p = plain.next();
  CHECK(p.keypoint_unwarp.empty());
  const auto want = expected_frame(a, p.frame_index[0]);
  CHECK(std::vector<float>(p.images, p.images + want.size()) == want);
}

TEST_CASE("video prediction batches of a context model: one sequence of rows + 4 frames, clamped to the video",
          "[data][media]") {
  // heatmap_mhcrnn on a video: row t holds frames t-2 .. t+2, clamped to the first and
  // last frame; a batch of R rows is the sequence t0-2 .. t0+R+1 (clamped), so the
  // backbone sees each frame once. Checked at both ends and in the middle, over a
  // range that starts inside the video (a rank's share).
  ScratchDir dir("video_batches_context");
  const std::string a = dir.file("a.avi");
  write_video(a, 23);
  trainer::data::VideoBatchOptions o;
  o.batch_size = 4;
  o.height = o.width = 32;
  o.context = true;
  o.num_workers = 2;
  const std::size_t frame = 3 * 32 * 32;
  for (const long begin : {0L, 9L}) {
    trainer::data::VideoBatches batches(a, begin, -1, o);
    long t = begin;
    while (const Batch* b = batches.next()) {
      INFO("rows from frame " << b->frame_index[0]);
      REQUIRE(b->sliding_context);
      REQUIRE(b->context_frames == 5);
      REQUIRE(b->image_count() == b->size + 4);
      CHECK(b->frame_index[0] == t);
      for (int j = 0; j < b->size + 4; ++j) {
        const long f = std::min(std::max(t - 2 + j, 0L), 22L);
        const float* at = b->images + static_cast<std::size_t>(j) * frame;
        CHECK(std::vector<float>(at, at + frame) == expected_frame(a, f));
      }
      t += b->size;
    }
    CHECK(t == 23);
  }
}

TEST_CASE("video prediction batches: a seek per run of chunks between keyframes, the same batches for any worker "
          "count", "[data][media]") {
  // lightning-pose's example video: 994 frames, keyframes at 0, 192, 432, 682 and 932
  // (x264), so 64-frame chunks make 5 runs. A seek per chunk, as before runs, made 13
  // seeks with 2 workers, each decoding from the keyframe before its chunk.
  const std::string video = mirror_mouse_video();
  if (video.empty()) return;
  const std::size_t frame = 3 * 32 * 32;
  for (const bool context : {false, true}) {
    INFO((context ? "context model" : "single-frame model"));
    trainer::data::VideoBatchOptions o;
    o.batch_size = 32;
    o.height = o.width = 32;
    o.channels = 1;
    o.context = context;
    std::vector<float> first_pass;
    for (const int workers : {1, 3}) {
      o.num_workers = workers;
      trainer::data::VideoBatches batches(video, 0, -1, o);
      std::vector<float> all;
      long rows = 0;
      while (const Batch* b = batches.next()) {
        all.insert(all.end(), b->images, b->images + static_cast<std::size_t>(b->image_count()) * frame);
        rows += b->size;
      }
      CHECK(rows == 994);
      if (workers == 1) {
        CHECK(batches.seeks() == 0);  // one reader from frame 0 to the end
        first_pass = all;
      } else {
        CHECK(batches.seeks() >= 1);
        CHECK(batches.seeks() <= 4);  // one per run after the first that another worker starts
        CHECK(all == first_pass);
      }
    }
    // A frame decoded on its own (a seek to it) is the one the batches hold: row 500's
    // centre frame, past the third keyframe, and the last frame.
    const auto row_image = [&](long f) {
      const std::size_t sequence_rows = 32 + 4;  // each batch holds rows + 4 frames with context
      const long batch = f / 32, row = f % 32;
      const std::size_t offset = context ? static_cast<std::size_t>(batch) * sequence_rows + row + 2
                                         : static_cast<std::size_t>(f);
      return std::vector<float>(first_pass.begin() + static_cast<std::ptrdiff_t>(offset * frame),
                                first_pass.begin() + static_cast<std::ptrdiff_t>((offset + 1) * frame));
    };
    for (const long f : {500L, 993L}) CHECK(row_image(f) == expected_frame(video, f, 1));
    // A rank's share in the middle (frames 300 .. 799): the same frames with 3 workers
    // as with 1, and the first one the whole video's.
    std::vector<float> share[2];
    for (const int workers : {1, 3}) {
      o.num_workers = workers;
      trainer::data::VideoBatches batches(video, 300, 800, o);
      long rows = 0;
      while (const Batch* b = batches.next()) {
        if (rows == 0) CHECK(b->frame_index[0] == 300);
        auto& out = share[workers == 3];
        out.insert(out.end(), b->images, b->images + static_cast<std::size_t>(b->image_count()) * frame);
        rows += b->size;
      }
      CHECK(rows == 500);
    }
    CHECK(share[1] == share[0]);
    const std::size_t first = context ? 2 : 0;  // the first row's centre frame
    CHECK(std::vector<float>(share[0].begin() + static_cast<std::ptrdiff_t>(first * frame),
                             share[0].begin() + static_cast<std::ptrdiff_t>((first + 1) * frame)) == row_image(300));
  }
}

TEST_CASE("video prediction batches: a refused allocation of an extra slot is not an error; of a needed one it is, "
          "with nothing leaked", "[data][media]") {
  // test_vid.mp4's runs are 3-4 chunks long, so 2 workers want 9 slots and need 3.
  const std::string video = mirror_mouse_video();
  if (video.empty()) return;
  int live = 0, granted = 0, limit = 0;
  trainer::data::VideoBatchOptions o;
  o.batch_size = 32;
  o.height = o.width = 32;
  o.channels = 1;
  o.num_workers = 2;
  o.allocator.allocate = [&](std::size_t bytes) -> void* {
    if (granted >= limit) return nullptr;
    ++granted;
    ++live;
    return ::operator new(bytes);
  };
  o.allocator.release = [&](void* p) {
    --live;
    ::operator delete(p);
  };
  limit = 5;
  {
    trainer::data::VideoBatches batches(video, 0, -1, o);
    long rows = 0;
    while (const Batch* b = batches.next()) rows += b->size;
    CHECK(rows == 994);
  }
  CHECK(granted == 5);
  CHECK(live == 0);
  granted = 0;
  limit = 2;
  CHECK_THROWS_AS(trainer::data::VideoBatches(video, 0, -1, o), trainer::SystemError);
  CHECK(live == 0);
}
