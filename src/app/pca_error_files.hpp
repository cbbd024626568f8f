#pragma once
// lightning-pose's PCA error files beside a predictions CSV (metrics.py,
// compute_metrics_single): <stem>_pca_singleview_error.csv when
// data.columns_for_singleview_pca is set, <stem>_pca_multiview_error.csv when
// data.mirrored_column_matches is set, whatever model.losses_to_use says. Each holds
// the PCA reprojection error (train/keypoint_pca.hpp) of every predicted keypoint and
// frame in pixels, empty for keypoints outside the PCA; one header row of keypoint
// names, the frame as index, and `set` when the predictions have it. The PCA is fitted
// as the loss fits it: on the training split's labels, with the loss's settings.
#include <string>  // std::string
#include <vector>  // std::vector

#include "config/config.hpp"       // Config
#include "data/dataset.hpp"        // data::Dataset
#include "data/split.hpp"          // data::Split
#include "train/keypoint_pca.hpp"  // train::KeypointPca
#include "util/log.hpp"            // Log

namespace trainer::app {

struct PcaErrorFit {
  std::string name;  // "pca_singleview" or "pca_multiview"
  train::KeypointPca pca;
};

// The training split's labels [frames, K, 2] in stored-frame pixels (NaN: not
// labelled): what the PCA error files are fitted on.
std::vector<float> training_labels(const data::Dataset& dataset, const data::Split& split);

// The fits lightning-pose's metrics make for this configuration, on `labels`
// [frames, K, 2] (NaN: not labelled) in the pixels the predictions will be in. A fit
// that fails (too few labels) is left out with a warning, as lightning-pose skips it.
std::vector<PcaErrorFit> fit_pca_error_metrics(const Config& config, const std::vector<float>& labels,
                                               int num_keypoints, const Log& log);

// "<predictions stem>_<metric>_error.csv" beside `predictions_csv`, lightning-pose's
// name for a metric's file (metric: "pixel", "pca_singleview", "pca_multiview").
std::string metric_error_path(const std::string& predictions_csv, const std::string& metric);

// The file's text for `keypoints` [frames, K, 2] with row labels `index` (one per
// frame) and, when not empty, `sets` (one per frame).
std::string pca_error_csv(const train::KeypointPca& pca, const std::vector<std::string>& keypoint_names,
                          const std::vector<std::string>& index, const std::vector<float>& keypoints,
                          const std::vector<std::string>& sets);

}  // namespace trainer::app
