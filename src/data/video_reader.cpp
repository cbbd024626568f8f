// Video reading with OpenCV's FFmpeg backend, through the media module (see
// video_reader.hpp and media_api.hpp).
#include "data/video_reader.hpp"

#include <sys/stat.h>  // stat, S_ISDIR, S_ISREG

#include <algorithm>  // std::sort, std::transform
#include <cctype>     // std::tolower
#include <cmath>      // std::lround
#include <filesystem> // directory_iterator
#include <opencv2/imgproc.hpp>  // cv::cvtColor

#include "data/media_loader.hpp"  // media_api: the decoder lives in the media module
#include "util/error.hpp"         // UserError

namespace trainer::data {

namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}
bool has_video_extension(const std::string& name) {
  const auto dot = name.rfind('.');
  if (dot == std::string::npos) return false;
  const std::string ext = lower(name.substr(dot));
  for (const auto& e : video_extensions())
    if (ext == e) return true;
  return false;
}
}  // namespace

const std::vector<std::string>& video_extensions() {
  static const std::vector<std::string> names = {".mp4", ".avi", ".mov", ".mkv", ".m4v", ".mpg", ".mpeg", ".webm"};
  return names;
}

std::vector<std::string> list_videos(const std::string& file_or_dir) {
  struct stat st {};
  if (::stat(file_or_dir.c_str(), &st) != 0)
    throw UserError("video '" + file_or_dir + "' does not exist", "give a video file or a folder of videos");
  if (!S_ISDIR(st.st_mode)) return {file_or_dir};
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(file_or_dir, ec)) {
    if (entry.is_regular_file(ec) && has_video_extension(entry.path().filename().string()))
      out.push_back(entry.path().string());
  }
  if (ec) throw UserError("cannot list video folder '" + file_or_dir + "': " + ec.message());
  std::sort(out.begin(), out.end());
  if (out.empty()) {
    std::string exts;
    for (const auto& e : video_extensions()) exts += (exts.empty() ? "" : " ") + e;
    throw UserError("folder '" + file_or_dir + "' holds no videos", "video files end in one of: " + exts);
  }
  return out;
}

struct VideoReader::Impl {
  std::unique_ptr<media::VideoDecoder> capture;
  long next = 0;  // frame the decoder returns on the next grab
  cv::Mat bgr;
};

VideoReader::VideoReader(const std::string& path) : impl_(std::make_unique<Impl>()) {
  info_.path = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw UserError("video '" + path + "' does not exist", "give a video file or a folder of videos");
  if (!S_ISREG(st.st_mode)) throw UserError("video '" + path + "' is not a file");
  impl_->capture = media_api("reading video '" + path + "'").make_decoder();
  if (!impl_->capture->open(path, false))
    throw UserError("video '" + path + "' cannot be opened or decoded",
                    "check that it is a complete video file (e.g. `ffprobe " + path + "`)");
  info_.frame_count = static_cast<long>(std::llround(impl_->capture->frame_count()));
  info_.fps = impl_->capture->fps();
  info_.width = impl_->capture->width();
  info_.height = impl_->capture->height();
  if (info_.frame_count <= 0)
    throw UserError("video '" + path + "' has no frames", "the file is empty or its frame count is unknown");
  if (info_.width <= 0 || info_.height <= 0)
    throw UserError("video '" + path + "' has no frame size (" + std::to_string(info_.width) + "x" +
                    std::to_string(info_.height) + ")");
  if (!(info_.fps > 0) || !std::isfinite(info_.fps))
    throw UserError("video '" + path + "' has no valid frame rate (" + std::to_string(info_.fps) + ")");
}

VideoReader::~VideoReader() = default;
VideoReader::VideoReader(VideoReader&&) noexcept = default;
VideoReader& VideoReader::operator=(VideoReader&&) noexcept = default;

void VideoReader::read(long index, int channels, std::vector<std::uint8_t>& out) {
  const std::string where = "video '" + info_.path + "' frame " + std::to_string(index);
  if (channels != 1 && channels != 3) throw UserError(where + ": channels must be 1 or 3");
  if (index < 0 || index >= info_.frame_count)
    throw UserError(where + " is out of range (the video has " + std::to_string(info_.frame_count) + " frames)");
  media::VideoDecoder& cap = *impl_->capture;
  if (index != impl_->next) {
    // Forward by a few frames: decoding on is cheaper (and surer) than a seek, which
    // decodes from the keyframe before (the next rank's share of an unlabelled window
    // is typically 8-32 frames).
    if (impl_->next >= 0 && index > impl_->next && index - impl_->next <= 48) {  // next < 0: position unknown
      while (impl_->next < index) {
        if (!cap.grab())
          throw UserError("video '" + info_.path + "' frame " + std::to_string(impl_->next) +
                              " does not decode (the file is truncated or corrupt; its header says " +
                              std::to_string(info_.frame_count) + " frames)");
        ++impl_->next;
      }
    } else {
      ++seeks_;
      if (!cap.seek(index)) {
        // Not frame-exact here: reopen and decode from the start (slow, exact).
        cap.close();
        if (!cap.open(info_.path, false)) throw UserError(where + ": the video cannot be reopened");
        impl_->next = 0;
        while (impl_->next < index) {
          if (!cap.grab())
            throw UserError("video '" + info_.path + "' frame " + std::to_string(impl_->next) +
                            " does not decode (the file is truncated or corrupt)");
          ++impl_->next;
        }
      }
      impl_->next = index;
    }
  }
  if (!cap.read(impl_->bgr)) {
    impl_->next = -1;  // position unknown: the next read seeks
    throw UserError(where + " does not decode (the file is truncated or corrupt; its header says " +
                        std::to_string(info_.frame_count) + " frames)",
                    "re-encode or re-copy the video, e.g. `ffmpeg -i in.mp4 -c:v libx264 out.mp4`");
  }
  impl_->next = index + 1;
  const cv::Mat& bgr = impl_->bgr;
  if (bgr.depth() != CV_8U) throw UserError(where + " is not 8-bit");
  if (bgr.cols != info_.width || bgr.rows != info_.height)
    throw UserError(where + " is " + std::to_string(bgr.cols) + "x" + std::to_string(bgr.rows) +
                    " but the video says " + std::to_string(info_.width) + "x" + std::to_string(info_.height));
  out.resize(static_cast<std::size_t>(bgr.rows) * bgr.cols * channels);
  cv::Mat dst(bgr.rows, bgr.cols, channels == 3 ? CV_8UC3 : CV_8UC1, out.data());
  const int in_c = bgr.channels();
  if (channels == 3) {
    if (in_c == 3) cv::cvtColor(bgr, dst, cv::COLOR_BGR2RGB);
    else if (in_c == 1) cv::cvtColor(bgr, dst, cv::COLOR_GRAY2RGB);
    else cv::cvtColor(bgr, dst, cv::COLOR_BGRA2RGB);
  } else {
    if (in_c == 3) cv::cvtColor(bgr, dst, cv::COLOR_BGR2GRAY);
    else if (in_c == 1) bgr.copyTo(dst);
    else cv::cvtColor(bgr, dst, cv::COLOR_BGRA2GRAY);
  }
}

long VideoReader::count_decodable_frames() {
  std::vector<std::uint8_t> last;
  read(info_.frame_count - 1, 1, last);  // positions the decoder after the last announced frame
  long frames = info_.frame_count;
  while (impl_->capture->grab()) ++frames;
  impl_->next = -1;  // at the end of the file: the next read seeks
  info_.frame_count = frames;
  return frames;
}

void VideoReader::trust_frame_count(long frames) {
  if (frames > 0) info_.frame_count = frames;
}

std::vector<long> keyframe_positions(const std::string& path, long until) {
  // FFmpeg's raw stream mode: grab() returns packets undecoded, with their key flag.
  const auto packets = media_api("reading video '" + path + "'").make_decoder();
  if (!packets->open(path, true)) return {};
  std::vector<long> keyframes;
  for (long packet = 0; (until < 0 || packet <= until) && packets->grab(); ++packet)
    if (packets->packet_is_keyframe()) keyframes.push_back(packet);
  return keyframes;
}

}  // namespace trainer::data
