#pragma once
// lightning-pose's unsupervised losses on the keypoints of unlabelled video frames
// (its losses.py: TemporalLoss, PCALoss; factory.py: how they are weighted), for
// the semi-supervised step (step.hpp). Each term is
//   weight * anneal * loss,  weight = 1 / (2 exp(log_weight)),
// with `anneal` the warm-up factor of unsupervised_importance() (lightning-pose's
// AnnealWeight callback). Keypoints are measured in original-frame pixels, where
// the epsilons are given; the PCA is fitted once, on the labelled training frames'
// keypoints in the same pixels (keypoint_pca.hpp).
#include <memory>  // std::unique_ptr
#include <string>  // std::string
#include <vector>  // std::vector

#include "compute/backend.hpp"             // compute::Backend, DeviceBuffer
#include "compute/pca_loss_table_buffers.hpp"  // compute::PcaLossTableBuffers
#include "config/config.hpp"               // LossesConfig, DataConfig
#include "train/keypoint_pca.hpp"          // KeypointPca
#include "train/unsupervised_loss_names.hpp"  // unsupervised_loss_names

namespace trainer::train {

// lightning-pose's AnnealWeight: init_val up to freeze_until_epoch, then
// init_val + (epoch - freeze) * increase_factor, at most final_val.
double unsupervised_importance(const LossesConfig& config, int epoch);

// The PCA fit's settings for "pca_singleview" or "pca_multiview" from the configuration
// (losses.<name>.*, data.columns_for_singleview_pca, data.mirrored_column_matches):
// what the loss fits, and what the PCA error files after training fit.
KeypointPcaSettings pca_settings_of(const std::string& name, const LossesConfig& config, const DataConfig& data);

// What is logged per term: "<name>" and its weight.
struct UnsupervisedTerm {
  std::string name;   // temporal, pca_singleview, pca_multiview
  double weight = 0;  // 1 / (2 exp(log_weight))
};

class UnsupervisedLosses {
 public:
  // `losses_to_use` in model.losses_to_use order. `labeled_keypoints` [N, K, 2]: the
  // training split's labels in original-frame pixels (NaN = missing), for the PCA
  // fits; `notes` receives what a user should read once (the PCA's kept components
  // and epsilon, its warnings). UserError for settings the data cannot satisfy.
  UnsupervisedLosses(compute::Backend& backend, compute::Stream& stream, const std::vector<std::string>& losses_to_use,
                     const LossesConfig& config, const DataConfig& data, int num_keypoints,
                     const std::vector<float>& labeled_keypoints, std::vector<std::string>* notes);
  ~UnsupervisedLosses();
  UnsupervisedLosses(const UnsupervisedLosses&) = delete;
  UnsupervisedLosses& operator=(const UnsupervisedLosses&) = delete;

  const std::vector<UnsupervisedTerm>& terms() const { return terms_; }
  const std::vector<std::string>& names() const { return names_; }

  // keypoints/confidence [frames, K] from soft_argmax in network-input pixels;
  // (scale_x, scale_y) take them to frame pixels. values[t] (device) = term t's
  // unweighted loss; dkeypoints += factor * weight_t * d(loss_t)/d(keypoints) for
  // every term (the caller zeroes it; factor = anneal x loss-scaler scale).
  void compute(const float* keypoints, const float* confidence, int frames, int num_keypoints, float scale_x,
               float scale_y, float factor, float* values, float* dkeypoints, compute::Stream& stream);

 private:
  compute::Backend& backend_;
  std::vector<UnsupervisedTerm> terms_;
  std::vector<std::string> names_;
  // temporal
  compute::DeviceBuffer temporal_epsilon_;
  float temporal_prob_threshold_ = 0;
  // pca_singleview / pca_multiview, in terms_ order (null for temporal)
  std::vector<std::unique_ptr<compute::PcaLossTableBuffers>> pca_tables_;
};

}  // namespace trainer::train
