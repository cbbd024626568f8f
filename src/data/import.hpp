#pragma once
// `trainer import`: a DeepLabCut / lightning-pose project (CollectedData.csv, or
// DeepLabCut's pandas CollectedData_<scorer>.h5, plus PNG/JPEG frames) into the HDF5
// dataset format.
#include <cstdint>  // std::int64_t
#include <string>   // std::string
#include <vector>   // std::vector

#include "data/label_csv.hpp"  // LabelTable

namespace trainer::data {

struct ImportOptions {
  std::string csv;           // CollectedData.csv
  std::string out;           // output .h5
  std::string root;          // image paths are relative to this; empty: the CSV's folder
  int resize_height = 0;     // 0: keep; frames of different sizes are then an error
  int resize_width = 0;
  int deflate_level = 0;
  // A pandas .h5 label file in the "table" layout keeps its column names pickled: the
  // keypoint names must be given (lightning-pose's data.keypoint_names, DeepLabCut's
  // bodyparts). Checked against the file's own names when it has them.
  std::vector<std::string> keypoint_names;
};

struct ImportSummary {
  std::int64_t frames = 0;
  int height = 0, width = 0, channels = 0, keypoints = 0;
  std::vector<std::string> skipped_coords;  // e.g. likelihood
  bool visibility = false;  // lightning-pose's `visible` column was read (stored as /visibility)
  bool resized = false;
  std::int64_t context_frames = 0;  // unlabelled neighbours stored as context (/context/*)
};

// Parses "HxW" (e.g. 256x256); throws UserError otherwise.
void parse_resize(const std::string& text, int* height, int* width);

ImportSummary import_project(const ImportOptions& options);

// Labels of one video's frames and the folder their image paths are relative to.
struct LabeledFolder {
  LabelTable table;
  std::string root;
};

// Several label tables into one HDF5 file (options.csv is unused; options.root
// is each folder's `root`). Every frame gets /video_id and /frame_number by
// lightning-pose's context-frame rule (frames in one folder whose names differ only
// in the number, e.g. img0123.png: same video, frame 123; see context.hpp), so
// heatmap_mhcrnn trains on imported labels.
// Every table must have the same keypoints, in the same order.
ImportSummary import_label_tables(const std::vector<LabeledFolder>& folders, const ImportOptions& options);

}  // namespace trainer::data
