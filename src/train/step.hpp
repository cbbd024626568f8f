#pragma once
// One training step and one evaluation batch on the compute device:
// batch (host) -> upload -> targets -> forward -> loss -> backward -> gradient sync
// -> optimizer. Evaluation adds soft-argmax keypoints and pixel errors.
#include <cstdint>  // std::uint8_t
#include <vector>   // std::vector

#include "compute/backend.hpp"      // compute::Backend, DeviceBuffer, HeatmapLoss
#include "data/batch.hpp"           // data::Batch
#include "model/pose_model.hpp"     // model::PoseModel
#include "model/hooks.hpp"          // model::BatchNormSync
#include "train/gradient_sync.hpp"  // GradientSync
#include "train/optimizer.hpp"      // Optimizer

namespace trainer::train {

// lightning-pose's Gaussian target width, in heatmap pixels.
inline constexpr float kHeatmapSigma = 1.25f;
// Temperature of the soft-argmax that turns heatmaps into keypoints.
inline constexpr float kSoftArgmaxTemperature = 1000.f;

compute::HeatmapLoss parse_heatmap_loss(const std::string& name);

// Sums over real (non-padded) labeled keypoints of one or more evaluated batches.
struct EvalSums {
  double loss_weighted = 0;  // sum of batch loss x counted keypoints
  double loss_count = 0;     // keypoints counted in the loss
  double rmse_sum = 0;       // sum of per-keypoint RMSE in original-frame pixels
  double rmse_count = 0;     // labeled keypoints in the RMSE
  void add(const EvalSums& o) {
    loss_weighted += o.loss_weighted, loss_count += o.loss_count;
    rmse_sum += o.rmse_sum, rmse_count += o.rmse_count;
  }
};

// Keypoints predicted for one batch, host side.
struct Predictions {
  std::vector<float> coords;      // [N, K, 2] in original-frame pixels
  std::vector<float> confidence;  // [N, K]
};

class StepRunner {
 public:
  StepRunner(compute::Backend& backend, compute::Stream& stream, model::PoseModel& model,
             compute::HeatmapLoss loss);

  // Forward + loss + backward + gradient sync + optimizer step. Returns the loss.
  double train_step(const data::Batch& batch, Optimizer& optimizer, GradientSync& sync,
                    bool train_backbone, model::BatchNormSync* bn_sync);
  // Forward only (running BN statistics): loss and RMSE sums over real rows;
  // predictions filled when non-null.
  EvalSums evaluate(const data::Batch& batch, Predictions* predictions = nullptr);
  // Predicts keypoints without labels (no loss).
  void predict(const data::Batch& batch, Predictions& predictions);

 private:
  // Uploads the images (all context frames of every row).
  void upload_images(const data::Batch& batch);
  // Uploads images and (masked) keypoints in heatmap pixels, builds the targets
  // (one copy per model branch).
  void upload(const data::Batch& batch, bool drop_padded_rows);
  void keypoints_from_heatmaps(const data::Batch& batch, compute::ConstTensorView heatmaps,
                               Predictions& out);

  compute::Backend& backend_;
  compute::Stream& stream_;
  model::PoseModel& model_;
  compute::HeatmapLoss loss_type_;
  compute::DeviceBuffer images_, keypoints_, targets_, mask_, loss_, dpred_, coords_, confidence_;
  compute::Shape4 image_shape_, heatmap_shape_;
  std::vector<float> host_keypoints_, host_mask_;
};

}  // namespace trainer::train
