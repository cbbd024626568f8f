#pragma once
// The run folder as a lightning-pose model directory, beside the trainer's own files,
// so that lightning-pose's tools open it (Model.from_dir, `litpose predict`, the app,
// EKS's scripts find the checkpoint with ckpt_path_from_base_path):
//   config.yaml                         the effective configuration, lightning-pose's YAML
//   tb_logs/<model_name>/version_<n>/checkpoints/epoch=<e>-step=<s>-best.ckpt
//                                       best.h5 as a Lightning checkpoint (torch.save's
//                                       format, lightning-pose's state_dict names and
//                                       the hyper_parameters its model classes take)
//   tb_logs/<model_name>/version_<n>/checkpoints/epoch=<e>-step=<s>.ckpt
//                                       with training.ckpt_every_n_epochs: the periodic ones
//   train_status.json                   {"status": ..., "progress": {...}} as its
//                                       JSONTrainingProgressTracker writes it
// heatmap and heatmap_mhcrnn models (HeatmapTracker / HeatmapTrackerMHCRNN layouts:
// model/lightning_pose_names.hpp).
#include <string>  // std::string
#include <vector>  // std::vector

#include "config/config.hpp"  // Config

namespace trainer::app {

// Whether the model type has a lightning-pose checkpoint layout here.
bool has_lightning_pose_checkpoint(const Config& config);

// The Lightning checkpoint of `h5_checkpoint` (a trainer checkpoint of this run),
// written atomically into `version_dir`/checkpoints/ as epoch=<e>-step=<s>-best.ckpt;
// earlier *-best.ckpt files there are removed (Lightning keeps the one best). Returns
// the path written.
std::string write_lightning_pose_checkpoint(const Config& config, const std::string& h5_checkpoint,
                                            const std::string& version_dir);

// lightning-pose's ckpt_every_n_epochs: each checkpoints/epoch=<E>-step=<S>.h5 of the
// run (train/train_loop.hpp) as `version_dir`/checkpoints/epoch=<E>-step=<S>.ckpt, the
// name Lightning's ModelCheckpoint(every_n_epochs=n) gives it; all kept, existing ones
// left alone. Returns the paths written.
std::vector<std::string> write_periodic_lightning_pose_checkpoints(const Config& config,
                                                                   const std::string& checkpoints_dir,
                                                                   const std::string& version_dir);

// train_status.json's content: `status` is TRAINING or COMPLETED, progress in epochs.
std::string train_status_json(const std::string& status, int completed_epochs, int total_epochs);
// train_status.json in `run_dir`, written atomically now (the per-epoch updates go
// through a BackgroundFileWriter instead: two fsyncs per epoch on the training thread
// cost it whatever the disk takes).
void write_train_status(const std::string& run_dir, const std::string& status, int completed_epochs,
                        int total_epochs);

// config.yaml in `run_dir` (lightning-pose's YAML of the effective configuration).
void write_lightning_pose_config(const std::string& run_dir, const Config& config);

}  // namespace trainer::app
