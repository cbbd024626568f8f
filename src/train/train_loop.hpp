#pragma once
// The epoch loop: learning-rate schedule and backbone unfreezing per epoch,
// training steps with a progress line every log_every_n_steps, validation every
// check_val_every_n_epoch, early stopping on the validation loss, metrics.csv,
// and the initial/best/last checkpoints. Every rank runs the same loop and makes
// the same collective calls; only rank 0 prints and writes files.
#include <string>  // std::string

#include "compute/stream.hpp"       // compute::Stream
#include "model/pose_model.hpp"     // model::PoseModel
#include "model/hooks.hpp"          // model::BatchNormSync
#include "train/batch_source.hpp"   // BatchSource
#include "train/checkpoint.hpp"     // TrainingState
#include "train/gradient_sync.hpp"  // GradientSync, MetricReducer
#include "train/lr_schedule.hpp"    // LrScheduleConfig
#include "train/optimizer.hpp"      // Optimizer
#include "train/step.hpp"           // StepRunner
#include "train/tensorboard_log.hpp"  // TensorBoardNames
#include "util/log.hpp"             // Log

namespace trainer::train {

struct LoopConfig {
  int max_epochs = 300;
  int min_epochs = 1;
  long max_steps = -1;  // -1: unlimited
  int check_val_every_n_epoch = 5;
  int early_stop_patience = 3;  // validation checks without improvement
  bool early_stopping = false;  // lightning-pose's training.early_stopping
  int log_every_n_steps = 10;
  LrScheduleConfig lr;
  std::string out_dir;          // metrics.csv, tb_logs/ and checkpoints/ go here
  TensorBoardNames tensorboard; // lightning-pose's names for the TensorBoard scalars
  bool save_initial = false;    // checkpoints/initial.h5 before the first step
  int world_size = 1;
  // Debugging: write the reduced gradients of step `dump_gradients_step` (1-based
  // global step; 0: the first step of this run) to this HDF5 file (gradient_dump.hpp).
  std::string dump_gradients;
  long dump_gradients_step = 0;
};

// How the loop reaches other ranks; the defaults are single-process no-ops.
struct DistributedHooks {
  GradientSync* gradients = nullptr;
  MetricReducer* metrics = nullptr;
  model::BatchNormSync* bn_sync = nullptr;
};

class TrainLoop {
 public:
  TrainLoop(StepRunner& runner, model::PoseModel& model, Optimizer& optimizer, BatchSource& train,
            BatchSource* val, LoopConfig config, DistributedHooks hooks, Log log, compute::Stream& stream);

  // Runs from `state` (fresh or resumed) to the end; returns the final state.
  TrainingState run(TrainingState state);

  std::string checkpoint_path(const std::string& which) const;  // initial | best | last

 private:
  EvalSums validate();
  void save(const std::string& which, const TrainingState& state);

  StepRunner& runner_;
  model::PoseModel& model_;
  Optimizer& optimizer_;
  BatchSource& train_;
  BatchSource* val_;
  LoopConfig config_;
  DistributedHooks hooks_;
  LocalGradientSync local_sync_;
  LocalMetricReducer local_metrics_;
  Log log_;
  compute::Stream& stream_;
};

}  // namespace trainer::train
