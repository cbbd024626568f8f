// Test helper for tests/integration/predict_video.sh (no python3-opencv needed):
//   video_tool write FILE FRAMES WIDTH HEIGHT   a video whose frames all differ (MJPG for
//                                               .avi and .mkv, mp4v for .mp4); FRAMES may be 0
//   video_tool understate FILE.mkv              halves the Matroska segment's Duration, so
//                                               the container announces half its frames
//                                               (OpenCV counts duration x fps) and all decode
//   video_tool extract VIDEO DIR NAME...         every frame as DIR/labeled-data/img%05d.png
//                                               and DIR/CollectedData.csv with those keypoint
//                                               names and no labels (what a user would import)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

namespace {
int write(const std::string& file, int frames, int w, int h) {
  const bool mp4 = file.size() > 4 && file.substr(file.size() - 4) == ".mp4";
  const int fourcc = mp4 ? cv::VideoWriter::fourcc('m', 'p', '4', 'v') : cv::VideoWriter::fourcc('M', 'J', 'P', 'G');
  cv::VideoWriter writer(file, fourcc, 30, cv::Size(w, h), true);
  if (!writer.isOpened()) {
    std::cerr << "video_tool: cannot write " << file << "\n";
    return 1;
  }
  for (int i = 0; i < frames; ++i) {
    cv::Mat img(h, w, CV_8UC3, cv::Scalar(30, 60, 90));
    // A moving blob and a bar: something for the network to see, different per frame.
    cv::circle(img, cv::Point(8 + (i * 2) % (w - 16), h / 2 + static_cast<int>((h / 4) * std::sin(i * 0.3))), 5,
               cv::Scalar(240, 240, 240), cv::FILLED);
    cv::rectangle(img, cv::Rect((i * 5) % (w - 6), 2, 6, h / 3), cv::Scalar(0, 200, 40 + (i * 7) % 200), cv::FILLED);
    writer.write(img);
  }
  return 0;
}

// The Segment Info's Duration element (EBML id 0x4489, a big-endian float of 4 or 8
// bytes), halved in place.
int understate(const std::string& file) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto at = bytes.find("\x44\x89");
  if (!f || at == std::string::npos || at + 3 >= bytes.size()) {
    std::cerr << "video_tool: no Matroska Duration in " << file << "\n";
    return 1;
  }
  const int size = static_cast<unsigned char>(bytes[at + 2]) & 0x7f;
  if ((size != 4 && size != 8) || at + 3 + size > bytes.size()) {
    std::cerr << "video_tool: unexpected Duration size " << size << " in " << file << "\n";
    return 1;
  }
  unsigned char raw[8];
  for (int i = 0; i < size; ++i) raw[i] = static_cast<unsigned char>(bytes[at + 3 + size - 1 - i]);  // to little-endian
  if (size == 8) {
    double d;
    std::memcpy(&d, raw, 8);
    d /= 2;
    std::memcpy(raw, &d, 8);
  } else {
    float d;
    std::memcpy(&d, raw, 4);
    d /= 2;
    std::memcpy(raw, &d, 4);
  }
  for (int i = 0; i < size; ++i) bytes[at + 3 + size - 1 - i] = static_cast<char>(raw[i]);
  f.seekp(0);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return f ? 0 : 1;
}

int extract(const std::string& video, const std::string& dir, int argc, char** argv, int first_name) {
  cv::VideoCapture cap(video, cv::CAP_FFMPEG);
  if (!cap.isOpened()) {
    std::cerr << "video_tool: cannot open " << video << "\n";
    return 1;
  }
  std::filesystem::create_directories(dir + "/labeled-data");
  std::ofstream csv(dir + "/CollectedData.csv");
  csv << "scorer";
  for (int i = first_name; i < argc; ++i) csv << ",test,test";
  csv << "\nbodyparts";
  for (int i = first_name; i < argc; ++i) csv << "," << argv[i] << "," << argv[i];
  csv << "\ncoords";
  for (int i = first_name; i < argc; ++i) csv << ",x,y";
  csv << "\n";
  cv::Mat frame;
  for (int n = 0; cap.read(frame); ++n) {
    char name[64];
    std::snprintf(name, sizeof name, "labeled-data/img%05d.png", n);
    if (!cv::imwrite(dir + "/" + name, frame)) return 1;
    csv << name;
    for (int i = first_name; i < argc; ++i) csv << ",,";
    csv << "\n";
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "write" && argc == 6) return write(argv[2], std::atoi(argv[3]), std::atoi(argv[4]), std::atoi(argv[5]));
  if (mode == "extract" && argc >= 5) return extract(argv[2], argv[3], argc, argv, 4);
  if (mode == "understate" && argc == 3) return understate(argv[2]);
  std::cerr << "usage: video_tool write FILE FRAMES W H | understate FILE.mkv | extract VIDEO DIR NAME...\n";
  return 2;
}
