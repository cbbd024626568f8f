#pragma once
// The training scalars in TensorBoard, under the names lightning-pose logs them
// (models/base.py, losses/losses.py and factory.py, Lightning's LearningRateMonitor),
// in its folder layout: <run>/tb_logs/<model.model_name>/version_<n>/ (TensorBoardLogger).
//   every log_every_n_steps steps: train_supervised_loss, train_heatmap_<type>_loss
//     (unweighted), train_heatmap_<type>_loss_weighted, heatmap_<type>_weight,
//     train_supervised_rmse (network-input pixels), epoch; semi-supervised also
//     train_<loss>_loss, train_<loss>_loss_weighted and <loss>_weight per unsupervised
//     loss, total_unsupervised_importance (the warm-up factor) and total_loss;
//   each epoch's first step: lr-<optimizer>/backbone and lr-<optimizer>/head;
//   each validation: val_supervised_loss, val_supervised_rmse (network-input pixels, as
//     lightning-pose's), val_heatmap_<type>_loss, val_heatmap_<type>_loss_weighted.
// Rank 0 only. Written as the loop goes and flushed at each epoch's end, so a killed
// run loses at most the current epoch's scalars.
#include <memory>  // std::unique_ptr
#include <string>  // std::string

#include "train/metrics_log.hpp"        // EpochMetrics, StepMetrics
#include "util/tensorboard_events.hpp"  // EventFileWriter

namespace trainer::train {

struct TensorBoardNames {
  std::string model_name = "test";           // model.model_name
  std::string heatmap_loss = "heatmap_mse";  // "heatmap_" + model.heatmap_loss_type
  std::string optimizer = "Adam";            // training.optimizer
};

class TensorBoardLog {
 public:
  // A fresh run (resume_step == 0) opens a new version_<n> folder. A resumed run
  // continues the newest one with a new event file that starts with a SessionLog
  // START at resume_step + 1: TensorBoard then drops what an earlier run logged after
  // the step this one resumes from, as it does for a restarted TensorFlow job.
  TensorBoardLog(const std::string& run_dir, TensorBoardNames names, long resume_step);

  void step(const StepMetrics& m);
  void epoch_start(int epoch, long steps_done, double lr_head, double lr_backbone);
  void epoch_end(const EpochMetrics& m);  // and flush
  void validation(const ValidationMetrics& m);  // a validation inside an epoch
  const std::string& path() const { return events_.path(); }

  // <run_dir>/tb_logs/<model_name>/version_<n>: n is one more than the highest
  // existing version, or the highest itself when `continue_newest` (0 when none).
  static std::string version_folder(const std::string& run_dir, const std::string& model_name,
                                    bool continue_newest);

 private:
  void scalar(const std::string& tag, double value, long step);
  TensorBoardNames names_;
  EventFileWriter events_;
};

}  // namespace trainer::train
