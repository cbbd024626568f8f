// lightning-pose's unsupervised losses (see unsupervised_losses.hpp).
#include "train/unsupervised_losses.hpp"

#include <algorithm>  // std::min
#include <cmath>      // std::exp
#include <cstdio>     // std::snprintf

#include "compute/pca_centering.hpp"  // pca_centering_from_name
#include "util/error.hpp"             // UserError

namespace trainer::train {

const std::vector<std::string>& unsupervised_loss_names() {
  static const std::vector<std::string> names = {"temporal", "pca_singleview", "pca_multiview"};
  return names;
}

double unsupervised_importance(const LossesConfig& c, int epoch) {
  if (epoch <= c.anneal_freeze_until_epoch) return c.anneal_init_val;
  return std::min(c.anneal_init_val + (epoch - c.anneal_freeze_until_epoch) * c.anneal_increase_factor,
                  c.anneal_final_val);
}

namespace {

double weight_of(double log_weight) { return 1.0 / (2.0 * std::exp(log_weight)); }

// lightning-pose's int-versus-float components_to_keep, from the config's text
// (app/config_keys.cpp accepts a whole number or a number with a decimal point).
ComponentsToKeep parse_components(const std::string& text) {
  if (text.find_first_of(".eE") != std::string::npos) return std::stod(text);
  return std::stoi(text);
}

std::string describe_fit(const std::string& name, const KeypointPca& pca) {
  double kept_variance = 0;
  for (int i = 0; i < pca.components_kept && i < static_cast<int>(pca.explained_variance_ratio.size()); ++i)
    kept_variance += pca.explained_variance_ratio[static_cast<std::size_t>(i)];
  char line[256];
  std::snprintf(line, sizeof line,
                "%s: PCA of the labelled keypoints%s keeps %d of %zu components (%.1f%% of the variance); "
                "epsilon %.3f px",
                name.c_str(),
                pca.centering == compute::PcaCentering::mean     ? " (each frame's mean subtracted)"
                : pca.centering == compute::PcaCentering::median ? " (each frame's median subtracted)"
                                                                 : "",
                pca.components_kept, pca.explained_variance_ratio.size(), 100.0 * kept_variance, pca.epsilon);
  return line;
}

}  // namespace

KeypointPcaSettings pca_settings_of(const std::string& name, const LossesConfig& c, const DataConfig& data) {
  const bool single = name == "pca_singleview";
  KeypointPcaSettings s;
  s.mode = single ? PcaMode::singleview : PcaMode::multiview;
  s.components_to_keep =
      parse_components(single ? c.pca_singleview_components_to_keep : c.pca_multiview_components_to_keep);
  const double epsilon = single ? c.pca_singleview_epsilon : c.pca_multiview_epsilon;
  if (epsilon >= 0) s.epsilon = epsilon;
  s.empirical_epsilon_percentile =
      single ? c.pca_singleview_empirical_epsilon_percentile : c.pca_multiview_empirical_epsilon_percentile;
  s.empirical_epsilon_multiplier =
      single ? c.pca_singleview_empirical_epsilon_multiplier : c.pca_multiview_empirical_epsilon_multiplier;
  if (single) s.centering = compute::pca_centering_from_name(c.pca_singleview_centering_method);
  if (single && !data.columns_for_singleview_pca.empty())
    s.columns_for_singleview_pca = data.columns_for_singleview_pca;
  else if (!single)
    s.mirrored_column_matches = data.mirrored_column_matches;
  return s;
}

UnsupervisedLosses::UnsupervisedLosses(compute::Backend& backend, compute::Stream& stream,
                                       const std::vector<std::string>& losses_to_use, const LossesConfig& config,
                                       const DataConfig& data, int num_keypoints,
                                       const std::vector<float>& labeled_keypoints, std::vector<std::string>* notes)
    : backend_(backend) {
  for (const auto& name : losses_to_use) {
    if (name == "temporal") {
      terms_.push_back({name, weight_of(config.temporal_log_weight)});
      std::vector<float> epsilon(static_cast<std::size_t>(num_keypoints));
      if (config.temporal_epsilon.size() == 1) {
        std::fill(epsilon.begin(), epsilon.end(), static_cast<float>(config.temporal_epsilon[0]));
      } else if (static_cast<int>(config.temporal_epsilon.size()) == num_keypoints) {
        for (std::size_t k = 0; k < epsilon.size(); ++k) epsilon[k] = static_cast<float>(config.temporal_epsilon[k]);
      } else {
        throw UserError("losses.temporal_epsilon lists " + std::to_string(config.temporal_epsilon.size()) +
                            " values but the data has " + std::to_string(num_keypoints) + " keypoints",
                        "give one value for all keypoints, or one per keypoint (lightning-pose's "
                        "losses.temporal.epsilon)");
      }
      temporal_epsilon_ = compute::DeviceBuffer(backend_, epsilon.size());
      backend_.upload(temporal_epsilon_.data(), epsilon.data(), epsilon.size(), stream);
      stream.synchronize();  // `epsilon` is pageable host memory that goes out of scope
      temporal_prob_threshold_ = static_cast<float>(config.temporal_prob_threshold);
      pca_tables_.emplace_back();
    } else if (name == "pca_singleview" || name == "pca_multiview") {
      const double log_weight = name == "pca_singleview" ? config.pca_singleview_log_weight
                                                         : config.pca_multiview_log_weight;
      terms_.push_back({name, weight_of(log_weight)});
      const KeypointPca pca = fit_keypoint_pca(labeled_keypoints, num_keypoints, pca_settings_of(name, config, data));
      if (notes) {
        notes->push_back(describe_fit(name, pca));
        for (const auto& w : pca.warnings) notes->push_back(name + ": " + w);
      }
      pca_tables_.push_back(std::make_unique<compute::PcaLossTableBuffers>(make_pca_loss_tables(backend_, pca, stream)));
    } else {
      throw UserError("unknown unsupervised loss '" + name + "'", "model.losses_to_use takes temporal, "
                                                                  "pca_singleview and pca_multiview");
    }
    names_.push_back(name);
  }
}

UnsupervisedLosses::~UnsupervisedLosses() = default;

void UnsupervisedLosses::compute(const float* keypoints, const float* confidence, int frames, int num_keypoints,
                                 float scale_x, float scale_y, float factor, float* values, float* dkeypoints,
                                 compute::Stream& stream) {
  for (std::size_t t = 0; t < terms_.size(); ++t) {
    const float grad_scale = factor * static_cast<float>(terms_[t].weight);
    if (names_[t] == "temporal") {
      backend_.temporal_loss(keypoints, confidence, frames, num_keypoints, temporal_epsilon_.data(),
                             temporal_prob_threshold_, scale_x, scale_y, values + t, dkeypoints, grad_scale, stream);
    } else {
      backend_.pca_loss(keypoints, frames, num_keypoints, pca_tables_[t]->tables(), scale_x, scale_y, values + t, dkeypoints,
                        grad_scale, stream);
    }
  }
}

}  // namespace trainer::train
