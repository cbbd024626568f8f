// VideoReader: frame-exact reads (seek = sequential decode), frame count and rate,
// and errors for missing, empty and truncated files. The videos are written here
// with OpenCV; test_vid.mp4 of the mirror-mouse example is used when present.
#include <catch2/catch.hpp>

#include <cstdlib>     // std::getenv
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ofstream
#include <opencv2/imgproc.hpp>  // cv::putText, cv::rectangle
#include <string>
#include <vector>

#include "scratch_dir.hpp"         // ScratchDir
#include "data/labeled_video.hpp"  // colormap_colors, write_labeled_video
#include "data/media_loader.hpp"   // media_api: the video encoder
#include "data/video_reader.hpp"   // VideoReader
#include "util/error.hpp"          // UserError

using trainer::UserError;
using trainer::data::VideoReader;
using trainer::data::testing::ScratchDir;

namespace {
// A video whose frame i shows a bar at a position given by i, so that any frame
// mix-up changes the pixels. MJPG in AVI: OpenCV writes it without external codecs.
void write_test_video(const std::string& path, int frames, int w = 96, int h = 64, double fps = 25) {
  const auto writer = trainer::data::media_api("writing a test video").make_encoder();
  REQUIRE(writer->open(path, fps, w, h, "MJPG"));
  for (int i = 0; i < frames; ++i) {
    cv::Mat img(h, w, CV_8UC3, cv::Scalar(20, 40, 60));
    cv::rectangle(img, cv::Rect((i * 3) % (w - 8), 4, 8, h - 8), cv::Scalar(255, 200, 10 * (i % 20)), cv::FILLED);
    cv::putText(img, std::to_string(i), cv::Point(2, h - 4), cv::FONT_HERSHEY_SIMPLEX, 0.4, cv::Scalar(0, 255, 0));
    REQUIRE(writer->write(img));
  }
  writer->close();
}

std::string shared_video() {
  const char* env = std::getenv("TRAINER_SHARED_DATA");
  const std::string root = env ? env : std::string(TRAINER_SOURCE_DIR) + "/../shared/data";
  return root + "/mirror-mouse-example/videos/test_vid.mp4";
}

void check_seek_equals_sequential(const std::string& path, long stride) {
  VideoReader seq(path);
  const long n = seq.info().frame_count;
  std::vector<std::vector<std::uint8_t>> frames(static_cast<std::size_t>(n));
  for (long i = 0; i < n; ++i) seq.read(i, 3, frames[static_cast<std::size_t>(i)]);
  VideoReader random(path);
  std::vector<std::uint8_t> got;
  // Backwards, far forwards and near forwards, so every path of read() is taken.
  std::vector<long> order;
  for (long i = n - 1; i >= 0; i -= stride) order.push_back(i);
  for (long i = 1; i < n; i += stride * 3) order.push_back(i);
  for (long i = n / 2; i < n && i < n / 2 + 5; ++i) order.push_back(i);
  for (long i : order) {
    random.read(i, 3, got);
    INFO(path << " frame " << i);
    REQUIRE(got == frames[static_cast<std::size_t>(i)]);
  }
}
}  // namespace

TEST_CASE("video reader: info and frame-exact seeking on a written video", "[video][media]") {
  ScratchDir dir("video");
  const std::string path = dir.file("clip.avi");
  write_test_video(path, 60, 96, 64, 30);
  VideoReader reader(path);
  CHECK(reader.info().frame_count == 60);
  CHECK(reader.info().fps == Approx(30));
  CHECK(reader.info().width == 96);
  CHECK(reader.info().height == 64);
  std::vector<std::uint8_t> rgb, gray;
  reader.read(0, 3, rgb);
  CHECK(rgb.size() == 96u * 64u * 3u);
  reader.read(0, 1, gray);
  CHECK(gray.size() == 96u * 64u);
  // Frames differ from each other (the reader does not return one frame twice).
  std::vector<std::uint8_t> other;
  reader.read(1, 3, other);
  CHECK(other != rgb);
  check_seek_equals_sequential(path, 7);
  const long announced = reader.info().frame_count;
  CHECK(reader.count_decodable_frames() == announced);  // the announced count is the decoded count
  reader.read(3, 3, other);                              // and reading goes on afterwards
  CHECK_THROWS_WITH(reader.read(60, 3, rgb), Catch::Contains("frame 60") && Catch::Contains("out of range"));
}

TEST_CASE("video reader: missing, empty and truncated files are errors naming them", "[video][media]") {
  ScratchDir dir("video-bad");
  CHECK_THROWS_WITH(VideoReader(dir.file("nope.mp4")), Catch::Contains("nope.mp4") && Catch::Contains("does not exist"));

  const std::string empty = dir.file("empty.avi");
  {
    const auto w = trainer::data::media_api("writing a test video").make_encoder();
    REQUIRE(w->open(empty, 25, 32, 32, "MJPG"));
    w->close();
  }
  CHECK_THROWS_AS(VideoReader(empty), UserError);
  CHECK_THROWS_WITH(VideoReader(empty), Catch::Contains("empty.avi"));

  const std::string zero_bytes = dir.file("zero.mp4");
  std::ofstream(zero_bytes).close();
  CHECK_THROWS_WITH(VideoReader(zero_bytes), Catch::Contains("zero.mp4"));

  // Cut a video in half: the header still promises every frame; reading them all
  // must fail with the file and the first frame that does not decode.
  const std::string cut = dir.file("cut.avi");
  write_test_video(cut, 80);
  const auto size = std::filesystem::file_size(cut);
  std::filesystem::resize_file(cut, size / 2);
  bool threw = false;
  try {
    VideoReader r(cut);
    std::vector<std::uint8_t> out;
    for (long i = 0; i < r.info().frame_count; ++i) r.read(i, 3, out);
  } catch (const UserError& e) {
    threw = true;
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("cut.avi") != std::string::npos);
  }
  CHECK(threw);
}

TEST_CASE("video reader: list_videos", "[video][media]") {
  ScratchDir dir("video-list");
  write_test_video(dir.file("b.avi"), 2);
  write_test_video(dir.file("a.avi"), 2);
  std::ofstream(dir.file("notes.txt")) << "x";
  const auto list = trainer::data::list_videos(dir.path().string());
  REQUIRE(list.size() == 2);
  CHECK(list[0] == dir.file("a.avi"));
  CHECK(list[1] == dir.file("b.avi"));
  CHECK(trainer::data::list_videos(dir.file("b.avi")) == std::vector<std::string>{dir.file("b.avi")});
  std::filesystem::create_directories(dir.file("none"));
  CHECK_THROWS_WITH(trainer::data::list_videos(dir.file("none")), Catch::Contains("holds no videos"));
  CHECK_THROWS_WITH(trainer::data::list_videos(dir.file("gone")), Catch::Contains("does not exist"));
}

TEST_CASE("video reader: test_vid.mp4 of the mirror-mouse example", "[video][shared][media]") {
  const std::string path = shared_video();
  if (!std::filesystem::exists(path)) {
    WARN("SKIPPED: " << path << " is absent (set TRAINER_SHARED_DATA)");
    return;
  }
  VideoReader reader(path);
  CHECK(reader.info().frame_count == 994);
  CHECK(reader.info().fps > 0);
  CHECK(reader.count_decodable_frames() == 994);
  check_seek_equals_sequential(path, 37);
}

TEST_CASE("labeled videos: colours sampled from matplotlib's colormaps as lightning-pose does", "[video]") {
  // matplotlib: cool(linspace(0, 1, 3)) * 255 as uint8 = (0,255,255), (128,127,255), (255,0,255).
  const auto c = trainer::data::colormap_colors("cool", 3);
  REQUIRE(c.size() == 3);
  CHECK((c[0] == std::array<std::uint8_t, 3>{0, 255, 255}));
  CHECK((c[1] == std::array<std::uint8_t, 3>{128, 127, 255}));
  CHECK((c[2] == std::array<std::uint8_t, 3>{255, 0, 255}));
  CHECK_THROWS_WITH(trainer::data::colormap_colors("viridisx", 2), Catch::Contains("unknown colormap"));
}

TEST_CASE("labeled videos: every frame is written, keypoints above the threshold drawn", "[video][media]") {
  ScratchDir dir("video-labeled");
  const std::string path = dir.file("clip.avi");
  write_test_video(path, 12, 96, 64, 25);
  trainer::data::LabeledVideoRequest r;
  r.video = path;
  r.out = dir.file("clip_labeled.mp4");
  r.num_keypoints = 2;
  for (int f = 0; f < 12; ++f) r.xyl.insert(r.xyl.end(), {40.f, 40.f, 0.95f, 10.f, 50.f, 0.1f});
  trainer::data::write_labeled_video(r);
  VideoReader out(r.out);
  CHECK(out.info().frame_count == 12);
  CHECK(out.info().width == 240);  // frames <= 100 px are upsampled 2.5x, as lightning-pose does
  CHECK(out.info().height == 160);
  std::vector<std::uint8_t> rgb;
  out.read(5, 3, rgb);
  // Keypoint 0 (likelihood 0.95 > 0.9) is a cyan dot at (100, 100) of the upsampled frame.
  const std::uint8_t* px = rgb.data() + (100 * 240 + 100) * 3;
  CHECK(px[0] < 60);
  CHECK(px[1] > 200);
  CHECK(px[2] > 200);
  // No temporary file is left beside it.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) files += e.path().extension() == ".mp4";
  CHECK(files == 1);
}
