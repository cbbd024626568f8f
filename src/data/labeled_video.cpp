// Labeled videos (see labeled_video.hpp).
#include "data/labeled_video.hpp"

#include <algorithm>   // std::min, std::clamp
#include <cmath>       // std::isnan, std::lround
#include <cstdio>      // std::snprintf
#include <functional>  // std::function
#include <opencv2/imgproc.hpp>  // cv::circle, cv::putText, cv::resize

#include "data/media_loader.hpp"  // media_api: the encoder lives in the media module
#include "data/video_reader.hpp"  // VideoReader
#include "util/atomic_write.hpp"  // PendingFile, TempName
#include "util/error.hpp"         // UserError

namespace trainer::data {

namespace {
using Rgb = std::array<double, 3>;
// matplotlib's linear segmented maps of these names (_cm.py), as functions of t in [0, 1].
const std::vector<std::pair<std::string, std::function<Rgb(double)>>>& colormaps() {
  static const std::vector<std::pair<std::string, std::function<Rgb(double)>>> maps = {
      {"cool", [](double t) { return Rgb{t, 1 - t, 1}; }},
      {"spring", [](double t) { return Rgb{1, t, 1 - t}; }},
      {"summer", [](double t) { return Rgb{t, 0.5 + 0.5 * t, 0.4}; }},
      {"autumn", [](double t) { return Rgb{1, t, 0}; }},
      {"winter", [](double t) { return Rgb{0, t, 1 - 0.5 * t}; }},
      {"gray", [](double t) { return Rgb{t, t, t}; }},
  };
  return maps;
}
}  // namespace

const std::vector<std::string>& labeled_video_colormap_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& m : colormaps()) out.push_back(m.first);
    return out;
  }();
  return names;
}

std::vector<std::array<std::uint8_t, 3>> colormap_colors(const std::string& colormap, int count) {
  const std::function<Rgb(double)>* map = nullptr;
  for (const auto& m : colormaps())
    if (m.first == colormap) map = &m.second;
  if (!map) throw UserError("unknown colormap '" + colormap + "'");
  std::vector<std::array<std::uint8_t, 3>> out;
  for (int i = 0; i < count; ++i) {
    // ScalarMappable normalizes linspace(0, 1, K) to itself, then looks the value up in a
    // 256-entry table (index floor(v * 256), the last entry for v = 1); * 255 truncated.
    const double v = count > 1 ? static_cast<double>(i) / (count - 1) : 0.0;
    const int index = std::min(255, static_cast<int>(v * 256));
    const Rgb c = (*map)(index / 255.0);
    out.push_back({static_cast<std::uint8_t>(c[0] * 255), static_cast<std::uint8_t>(c[1] * 255),
                   static_cast<std::uint8_t>(c[2] * 255)});
  }
  return out;
}

void write_labeled_video(const LabeledVideoRequest& request) {
  VideoReader reader(request.video);
  const VideoInfo& info = reader.info();
  const int k = request.num_keypoints;
  const long frames = k > 0 ? static_cast<long>(request.xyl.size() / (3 * static_cast<std::size_t>(k))) : 0;
  const auto colors = colormap_colors(request.colormap, k);
  const double up = (info.width <= 100 || info.height <= 100) ? 2.5 : (info.width <= 192 || info.height <= 192) ? 2 : 1;
  const int nx = static_cast<int>(up * info.width), ny = static_cast<int>(up * info.height);

  // The temporary name follows the one rule of util/atomic_write.hpp (with the .mp4
  // the encoder picks its container by), so the start-up cleanup removes what a kill
  // leaves, and a signal during the write removes it at once.
  PendingFile pending(request.out, TempName::keep_extension);
  const std::string& temp = pending.temp_path();
  // H.264 as lightning-pose writes (libx264); MPEG-4 part 2 where FFmpeg lacks the encoder.
  const auto writer = media_api("writing labeled video '" + request.out + "'").make_encoder();
  if (!writer->open(temp, info.fps, nx, ny, ""))
    throw UserError("cannot write labeled video '" + request.out + "'", "check that its folder is writable");
  std::vector<std::uint8_t> rgb;
  cv::Mat frame;
  try {
    for (long f = 0; f < info.frame_count; ++f) {
      reader.read(f, 3, rgb);
      cv::Mat src(info.height, info.width, CV_8UC3, rgb.data());
      if (up > 1) cv::resize(src, frame, cv::Size(nx, ny));
      else src.copyTo(frame);
      if (f < frames) {
        for (int j = 0; j < k; ++j) {
          const float* p = request.xyl.data() + (static_cast<std::size_t>(f) * k + j) * 3;
          if (!(p[2] > request.confidence_threshold) || std::isnan(p[0]) || std::isnan(p[1])) continue;
          const int xc = std::min(static_cast<int>(up * p[0]), nx - 1), yc = std::min(static_cast<int>(up * p[1]), ny - 1);
          const auto& c = colors[static_cast<std::size_t>(j)];
          cv::circle(frame, cv::Point(xc, yc), 4, cv::Scalar(c[0], c[1], c[2]), cv::FILLED);  // RGB frame
        }
      }
      const long seconds = static_cast<long>(f / info.fps);
      char text[96];
      std::snprintf(text, sizeof text, "t=%02ld:%02ld:%02ld, frame=%ld", seconds / 3600, (seconds / 60) % 60, seconds % 60, f);
      int baseline = 0;
      const cv::Size size = cv::getTextSize(text, cv::FONT_HERSHEY_SIMPLEX, 0.5, 1, &baseline);
      const int offset = 6, tx = offset, ty = size.height + offset;
      cv::rectangle(frame, cv::Point(tx - offset / 2, ty + offset / 2), cv::Point(tx + size.width + offset / 2, ty - size.height - offset / 2),
                    cv::Scalar(0, 0, 0), cv::FILLED);
      cv::putText(frame, text, cv::Point(tx, ty), cv::FONT_HERSHEY_SIMPLEX, 0.5, cv::Scalar(255, 255, 255), 1, cv::LINE_AA);
      cv::cvtColor(frame, frame, cv::COLOR_RGB2BGR);
      if (!writer->write(frame)) throw UserError("cannot write labeled video '" + request.out + "' (disk full?)");
    }
    writer->close();
    pending.commit();  // fsync, rename, fsync the folder
  } catch (...) {
    writer->close();
    throw;  // pending removes the temporary file
  }
}

}  // namespace trainer::data
