// The media module (libtrainer_media.so) loads from the build folder on demand, and
// what it encodes it decodes again: images through write_image / decode_image, and
// a video through the encoder and the decoder.
#include <catch2/catch.hpp>

#include <fstream>   // std::ifstream
#include <iterator>  // std::istreambuf_iterator
#include <opencv2/core.hpp>  // cv::Mat

#include "data/media_loader.hpp"  // media_api, media_module_status
#include "scratch_dir.hpp"        // ScratchDir

using trainer::data::media_api;
using trainer::data::testing::ScratchDir;

TEST_CASE("media module: found beside the build, with this program's interface", "[data][media]") {
  const auto& api = media_api("the media module test");
  CHECK(api.version == trainer::data::media::kApiVersion);
  CHECK(api.size == sizeof(trainer::data::media::Api));
  CHECK(std::string(api.description).find("OpenCV") != std::string::npos);
  CHECK(trainer::data::media_module_status().find("libtrainer_media.so") != std::string::npos);
}

TEST_CASE("media module: a PNG written is decoded to the same pixels; garbage is refused", "[data][media]") {
  ScratchDir dir("media-png");
  const auto& api = media_api("the media module test");
  cv::Mat gray(7, 9, CV_8UC1);
  for (int r = 0; r < gray.rows; ++r)
    for (int c = 0; c < gray.cols; ++c) gray.at<unsigned char>(r, c) = static_cast<unsigned char>(r * 30 + c);
  const std::string path = dir.file("g.png");
  REQUIRE(api.write_image(path, gray));
  std::ifstream in(path, std::ios::binary);
  const std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  cv::Mat back;
  REQUIRE(api.decode_image(bytes, back));
  REQUIRE(back.channels() == 1);
  CHECK(cv::countNonZero(back != gray) == 0);
  cv::Mat none;
  CHECK_FALSE(api.decode_image({1, 2, 3, 4}, none));
  CHECK_FALSE(api.decode_image({}, none));
  CHECK_FALSE(api.write_image(dir.file("no-such-folder/x.png"), gray));
}

TEST_CASE("media module: a video written with MJPG reads back with its size, rate and frames", "[data][media]") {
  ScratchDir dir("media-video");
  const auto& api = media_api("the media module test");
  const std::string path = dir.file("v.avi");
  {
    const auto enc = api.make_encoder();
    REQUIRE(enc->open(path, 12, 32, 16, "MJPG"));
    for (int i = 0; i < 5; ++i) REQUIRE(enc->write(cv::Mat(16, 32, CV_8UC3, cv::Scalar(40 * i, 0, 0))));
    enc->close();
    CHECK_FALSE(api.make_encoder()->open(dir.file("bad.avi"), 12, 32, 16, "TOOLONG"));
  }
  const auto dec = api.make_decoder();
  REQUIRE(dec->open(path, false));
  CHECK(dec->width() == 32);
  CHECK(dec->height() == 16);
  CHECK(dec->fps() == Approx(12));
  CHECK(dec->frame_count() == Approx(5));
  cv::Mat frame;
  int frames = 0;
  while (dec->read(frame)) ++frames;
  CHECK(frames == 5);
  CHECK_FALSE(api.make_decoder()->open(dir.file("missing.avi"), false));
}
