// lightning-pose's PCA error files (see pca_error_files.hpp).
#include "app/pca_error_files.hpp"

#include <cmath>   // std::isnan
#include <cstdio>  // std::snprintf

#include "train/unsupervised_losses.hpp"  // train::pca_settings_of
#include "util/csv_field.hpp"             // csv_field
#include "util/error.hpp"                 // UserError

namespace trainer::app {

std::vector<float> training_labels(const data::Dataset& dataset, const data::Split& split) {
  const int k = dataset.num_keypoints();
  std::vector<float> labels;
  labels.reserve(split.train.size() * static_cast<std::size_t>(k) * 2);
  for (const std::int64_t i : split.train) {
    const float* kp = dataset.keypoints(i);
    labels.insert(labels.end(), kp, kp + 2 * k);
  }
  return labels;
}

std::vector<PcaErrorFit> fit_pca_error_metrics(const Config& config, const std::vector<float>& labels,
                                               int num_keypoints, const Log& log) {
  std::vector<PcaErrorFit> fits;
  for (const std::string name : {"pca_singleview", "pca_multiview"}) {
    const bool wanted = name == "pca_singleview" ? !config.data.columns_for_singleview_pca.empty()
                                                 : !config.data.mirrored_column_matches.empty();
    if (!wanted) continue;
    try {
      fits.push_back({name, train::fit_keypoint_pca(labels, num_keypoints,
                                                    train::pca_settings_of(name, config.losses, config.data))});
    } catch (const UserError& e) {
      log.warn("no " + name + " error file: the PCA cannot be fitted on these labels (" + e.what() + ")");
    }
  }
  return fits;
}

std::string metric_error_path(const std::string& predictions_csv, const std::string& metric) {
  const std::string ext = ".csv";
  const bool has_ext = predictions_csv.size() > ext.size() &&
                       predictions_csv.compare(predictions_csv.size() - ext.size(), ext.size(), ext) == 0;
  return (has_ext ? predictions_csv.substr(0, predictions_csv.size() - ext.size()) : predictions_csv) + "_" + metric +
         "_error.csv";
}

std::string pca_error_csv(const train::KeypointPca& pca, const std::vector<std::string>& keypoint_names,
                          const std::vector<std::string>& index, const std::vector<float>& keypoints,
                          const std::vector<std::string>& sets) {
  const std::vector<double> error = train::pca_reprojection_error(pca, keypoints);
  const std::size_t k = keypoint_names.size();
  std::string out;
  for (const auto& name : keypoint_names) out += "," + csv_field(name);
  out += sets.empty() ? "\n" : ",set\n";
  char cell[48];
  for (std::size_t f = 0; f < index.size(); ++f) {
    out += csv_field(index[f]);
    for (std::size_t j = 0; j < k; ++j) {
      const double e = f * k + j < error.size() ? error[f * k + j] : std::nan("");
      if (std::isnan(e)) {
        out += ",";
      } else {
        std::snprintf(cell, sizeof cell, ",%.4f", e);
        out += cell;
      }
    }
    if (!sets.empty()) out += "," + sets[f];
    out += "\n";
  }
  return out;
}

}  // namespace trainer::app
