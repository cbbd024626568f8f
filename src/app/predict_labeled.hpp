#pragma once
// Keypoints for every labelled frame of a data set, as lightning-pose writes them
// after training (utils/predictions.py, metrics.py):
//   predictions.csv              3-row header (scorer <model_type>_tracker, bodyparts,
//                                coords x/y/likelihood), one row per frame, and a `set`
//                                column (train, validation, test, unused) when the data
//                                is the data the model was trained on
//   predictions_pixel_error.csv  the Euclidean error of each keypoint and frame in
//                                pixels of the stored frame (empty where unlabelled),
//                                plus `set`
//   predictions_pca_*_error.csv  with PCA keypoints in the configuration: the PCA
//                                reprojection error (app/pca_error_files.hpp)
// Coordinates are pixels of the stored frame; likelihood is the soft-argmax confidence.
#include <string>  // std::string

#include "config/config.hpp"  // Config
#include "util/log.hpp"       // Log

namespace trainer::app {

struct LabeledPredictions {
  std::string predictions_csv;  // its _pixel_error.csv twin goes beside it
  bool with_sets = true;        // the run's split, recomputed from the configuration
  // Where a data.csv_file is imported (cached): beside the run folder, as training does.
  std::string import_dir = "outputs/imported";
  std::string precision = "32";  // of the forward pass (predict --precision)
};

// One process; returns the number of frames predicted.
long predict_labeled_frames(const Config& config, const std::string& checkpoint, const LabeledPredictions& out,
                            const Log& log);

// "<model_type>_tracker": lightning-pose's scorer for its own predictions.
std::string lightning_pose_scorer(const std::string& model_type);

}  // namespace trainer::app
