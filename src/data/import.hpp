#pragma once
// `trainer import`: a DeepLabCut / lightning-pose project (CollectedData.csv plus
// PNG/JPEG frames) into the HDF5 dataset format.
#include <cstdint>  // std::int64_t
#include <string>   // std::string
#include <vector>   // std::vector

namespace trainer::data {

struct ImportOptions {
  std::string csv;           // CollectedData.csv
  std::string out;           // output .h5
  std::string root;          // image paths are relative to this; empty: the CSV's folder
  int resize_height = 0;     // 0: keep; frames of different sizes are then an error
  int resize_width = 0;
  int deflate_level = 0;
};

struct ImportSummary {
  std::int64_t frames = 0;
  int height = 0, width = 0, channels = 0, keypoints = 0;
  std::vector<std::string> skipped_coords;  // e.g. likelihood
  bool resized = false;
};

// Parses "HxW" (e.g. 256x256); throws UserError otherwise.
void parse_resize(const std::string& text, int* height, int* width);

ImportSummary import_project(const ImportOptions& options);

}  // namespace trainer::data
