#pragma once
// Labeled videos as lightning-pose draws them (utils/predictions.py,
// generate_labeled_video): every keypoint whose likelihood is above the threshold is
// a filled circle of radius 4 in its colour, the colours sampled evenly from a
// matplotlib colormap (keypoint i of K at i / (K - 1)), and a "t=HH:MM:SS, frame=N"
// stamp on a black box in the top-left corner. Frames smaller than 100 (192) pixels
// on a side are upsampled 2.5x (2x) first, as lightning-pose does.
#include <array>    // std::array
#include <cstdint>  // std::uint8_t
#include <string>   // std::string
#include <vector>   // std::vector

namespace trainer::data {

// The colormaps implemented (matplotlib's, exactly: its 256-entry tables):
// cool (lightning-pose's default), spring, summer, autumn, winter, gray.
const std::vector<std::string>& labeled_video_colormap_names();

// K colours (RGB) sampled from `colormap` as lightning-pose's _make_cmap does.
std::vector<std::array<std::uint8_t, 3>> colormap_colors(const std::string& colormap, int count);

struct LabeledVideoRequest {
  std::string video;        // the source video
  std::string out;          // the .mp4 to write (atomically: a temporary file renamed into place)
  int num_keypoints = 0;
  std::vector<float> xyl;   // [frames, K, 3]: x, y (source pixels), likelihood, one row per frame
  double confidence_threshold = 0.9;
  std::string colormap = "cool";
};

// Decodes the video, draws and encodes H.264 (mp4v where FFmpeg has no H.264
// encoder). UserError naming the file for an unreadable video or an unwritable output.
void write_labeled_video(const LabeledVideoRequest& request);

}  // namespace trainer::data
