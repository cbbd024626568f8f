// The media module (libtrainer_media.so): OpenCV's image codecs and FFmpeg video I/O
// behind data/media_api.hpp. Files under src/data/media/ are this module's sources,
// not the program's (CMakeLists.txt, scripts/sources.sh). Every entry catches what
// OpenCV throws: exceptions do not cross the module boundary.
#include <opencv2/core/version.hpp>  // CV_VERSION
#include <opencv2/imgcodecs.hpp>     // cv::imdecode, cv::imwrite
#include <opencv2/videoio.hpp>       // cv::VideoCapture, cv::VideoWriter

#include <cstdlib>  // setenv
#include <mutex>    // std::call_once

#include "data/media_api.hpp"  // the interface

namespace trainer::data::media {
namespace {

// FFmpeg prints its own errors ("moov atom not found") on stderr, at the level OpenCV
// leaves it (AV_LOG_ERROR), before the trainer's one `error:` line about the same
// file. OpenCV reads OPENCV_FFMPEG_LOGLEVEL when its FFmpeg backend starts, i.e. at
// the first open; -8 is AV_LOG_QUIET. A value the user set (for debugging) is kept.
void quiet_ffmpeg() {
  static std::once_flag once;
  std::call_once(once, [] { ::setenv("OPENCV_FFMPEG_LOGLEVEL", "-8", 0); });
}

class OpenCvDecoder final : public VideoDecoder {
 public:
  bool open(const std::string& path, bool packets_only) override {
    quiet_ffmpeg();
    try {
      // FFmpeg explicitly: another backend (GStreamer, images) could count frames
      // differently. The raw stream mode returns packets with their key flag.
      const bool ok = packets_only ? capture_.open(path, cv::CAP_FFMPEG, {cv::CAP_PROP_FORMAT, -1})
                                   : capture_.open(path, cv::CAP_FFMPEG);
      return ok && capture_.isOpened();
    } catch (const std::exception&) {
      return false;
    }
  }
  void close() override {
    try {
      capture_.release();
    } catch (const std::exception&) {
    }
  }
  double frame_count() const override { return property(cv::CAP_PROP_FRAME_COUNT); }
  double fps() const override { return property(cv::CAP_PROP_FPS); }
  int width() const override { return static_cast<int>(property(cv::CAP_PROP_FRAME_WIDTH)); }
  int height() const override { return static_cast<int>(property(cv::CAP_PROP_FRAME_HEIGHT)); }
  bool grab() override {
    try {
      return capture_.grab();
    } catch (const std::exception&) {
      return false;
    }
  }
  bool read(cv::Mat& frame) override {
    try {
      return capture_.read(frame) && !frame.empty();
    } catch (const std::exception&) {
      return false;
    }
  }
  bool seek(long index) override {
    try {
      // OpenCV's FFmpeg seek goes to the keyframe before and decodes forward; the
      // position it reports afterwards says whether it landed on the frame.
      return capture_.set(cv::CAP_PROP_POS_FRAMES, static_cast<double>(index)) &&
             static_cast<long>(capture_.get(cv::CAP_PROP_POS_FRAMES) + 0.5) == index;
    } catch (const std::exception&) {
      return false;
    }
  }
  bool packet_is_keyframe() const override { return property(cv::CAP_PROP_LRF_HAS_KEY_FRAME) != 0; }

 private:
  double property(int id) const {
    try {
      return capture_.get(id);
    } catch (const std::exception&) {
      return 0;
    }
  }
  cv::VideoCapture capture_;
};

class OpenCvEncoder final : public VideoEncoder {
 public:
  bool open(const std::string& path, double fps, int width, int height, const std::string& fourcc) override {
    quiet_ffmpeg();  // e.g. "Could not find encoder" before the fallback codec
    try {
      const cv::Size size(width, height);
      // A named codec goes to whichever OpenCV writer has it (MJPG in AVI: OpenCV's own).
      if (!fourcc.empty())
        return fourcc.size() == 4 &&
               writer_.open(path, cv::CAP_ANY, cv::VideoWriter::fourcc(fourcc[0], fourcc[1], fourcc[2], fourcc[3]),
                            fps, size);
      // H.264 as lightning-pose writes (libx264); MPEG-4 part 2 where FFmpeg lacks the encoder.
      return writer_.open(path, cv::CAP_FFMPEG, cv::VideoWriter::fourcc('a', 'v', 'c', '1'), fps, size) ||
             writer_.open(path, cv::CAP_FFMPEG, cv::VideoWriter::fourcc('m', 'p', '4', 'v'), fps, size);
    } catch (const std::exception&) {
      return false;
    }
  }
  bool write(const cv::Mat& bgr) override {
    try {
      writer_.write(bgr);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }
  void close() override {
    try {
      writer_.release();
    } catch (const std::exception&) {
    }
  }

 private:
  cv::VideoWriter writer_;
};

bool decode_image(const std::vector<unsigned char>& bytes, cv::Mat& image) {
  try {
    image = bytes.empty() ? cv::Mat() : cv::imdecode(bytes, cv::IMREAD_UNCHANGED);
    return !image.empty();
  } catch (const std::exception&) {
    return false;
  }
}

bool write_image(const std::string& path, const cv::Mat& image) {
  try {
    return cv::imwrite(path, image);
  } catch (const std::exception&) {
    return false;
  }
}

const Api kApi = [] {
  Api api;
  api.description = "OpenCV " CV_VERSION " imgcodecs + videoio (FFmpeg)";
  api.make_decoder = [] { return std::unique_ptr<VideoDecoder>(new OpenCvDecoder()); };
  api.make_encoder = [] { return std::unique_ptr<VideoEncoder>(new OpenCvEncoder()); };
  api.decode_image = decode_image;
  api.write_image = write_image;
  return api;
}();

}  // namespace
}  // namespace trainer::data::media

extern "C" __attribute__((visibility("default"))) const trainer::data::media::Api* trainer_media_api() {
  return &trainer::data::media::kApi;
}
