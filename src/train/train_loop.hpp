#pragma once
// The epoch loop: learning-rate schedule and backbone unfreezing per epoch,
// training steps with a progress line every log_every_n_steps, validation every
// check_val_every_n_epoch, early stopping on the validation loss, metrics.csv,
// and the initial/best/last checkpoints. Every rank runs the same loop and makes
// the same collective calls; only rank 0 prints and writes files.
#include <functional>  // std::function
#include <memory>  // std::unique_ptr
#include <string>  // std::string
#include <vector>  // std::vector

#include "compute/stream.hpp"       // compute::Stream
#include "model/pose_model.hpp"     // model::PoseModel
#include "model/hooks.hpp"          // model::BatchNormSync
#include "config/config.hpp"        // LossesConfig (the anneal schedule)
#include "train/batch_limit.hpp"    // BatchLimit
#include "train/batch_source.hpp"   // BatchSource, UnlabeledSource
#include "train/checkpoint.hpp"     // TrainingState
#include "train/checkpoint_writer.hpp"  // CheckpointWriter
#include "train/gradient_sync.hpp"  // GradientSync, MetricReducer
#include "train/lr_schedule.hpp"    // LrScheduleConfig
#include "train/optimizer.hpp"      // Optimizer
#include "train/step.hpp"           // StepRunner
#include "train/tensorboard_log.hpp"  // TensorBoardNames
#include "util/log.hpp"             // Log
#include "util/signal_cleanup.hpp"  // GracefulStop

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
  // lightning-pose's ckpt_every_n_epochs (Lightning's ModelCheckpoint(every_n_epochs=n,
  // save_top_k=-1)): checkpoints/epoch=<E>-step=<S>.h5 in every epoch E with (E + 1) % n
  // == 0, all kept, and last.h5 with it. Lightning saves it at the epoch's end when
  // validation runs at every epoch's end (or there is none), else at each validation of
  // such an epoch (inside the epoch too). 0: last.h5 at each validation (every
  // check_val_every_n_epoch epochs). last.h5 always at the end, and when a signal
  // stops the run.
  int checkpoint_every_n_epochs = 0;
  // Lightning's accumulate_grad_batches: batches per optimizer step (StepRunner's
  // MicroBatch); an epoch's last batch always steps. max_steps, log_every_n_steps and
  // the step count of checkpoints count optimizer steps; signals stop at a step.
  int accumulate_grad_batches = 1;
  // Lightning's val_check_interval: in the epochs that validate, validate after every
  // n batches of the epoch (a count) or every int(batches x f) (a fraction, at least 1),
  // as Lightning does: not at the epoch's end unless that falls on one. Unset (or 1.0):
  // at the epoch's end. A count above the epoch's batches is a UserError, as in Lightning.
  BatchLimit val_check_interval;
  // best.h5 and last.h5 without the optimizer state (about 3x smaller, cannot be
  // resumed), except the last.h5 of a run stopped by a signal, which must resume.
  bool save_weights_only = false;
  // SIGINT, SIGTERM and SIGUSR1 stop at the next step boundary, agreed by all ranks,
  // with a checkpoint of the exact position (null: signals keep their default action).
  const GracefulStop* stop_signals = nullptr;
  int world_size = 1;
  // Debugging: write the reduced gradients of step `dump_gradients_step` (1-based
  // global step; 0: the first step of this run) to this HDF5 file (gradient_dump.hpp).
  std::string dump_gradients;
  long dump_gradients_step = 0;
  // Semi-supervised: unlabelled frames for every step, and the warm-up of the
  // unsupervised weights (callbacks.anneal_weight); null: supervised only.
  UnlabeledSource* unlabeled = nullptr;
  LossesConfig anneal;
  // Rank 0, after each epoch's metrics: the epochs completed so far (the run folder's
  // progress file for lightning-pose's tools). An exception from it warns once and
  // stops the calls; it never stops the training.
  std::function<void(int epochs_completed)> on_epoch_end;
};

// How the loop reaches other ranks; the defaults are single-process no-ops.
struct DistributedHooks {
  GradientSync* gradients = nullptr;
  MetricReducer* metrics = nullptr;
  model::BatchNormSync* bn_sync = nullptr;
};

// The global step whose gradients --dump-gradients writes (-1: none) for a run resuming
// after `global_step`; UserError when that step is not one this run will train. Checked
// by `train` before its run folder is written, and again by TrainLoop::run.
long gradient_dump_step(const LoopConfig& config, long global_step);

class TrainLoop {
 public:
  TrainLoop(StepRunner& runner, model::PoseModel& model, Optimizer& optimizer, BatchSource& train,
            BatchSource* val, LoopConfig config, DistributedHooks hooks, Log log, compute::Stream& stream);

  // Runs from `state` (fresh or resumed) to the end; returns the final state.
  TrainingState run(TrainingState state);

  std::string checkpoint_path(const std::string& which) const;  // initial | best | last

  // The signal that stopped the last run() (SIGINT, SIGTERM, SIGUSR1), or 0.
  int stopped_by_signal() const { return stopped_by_signal_; }
  // Where the last run()'s time went, in seconds (rank 0's clock): its training
  // steps, validation, and the rest (checkpoints, epoch ends, the final save).
  struct Timing {
    double total = 0, steps = 0, validation = 0;
    double other() const { return total - steps - validation; }
  };
  const Timing& timing() const { return timing_; }

 private:
  EvalSums validate();
  // Whether the periodic checkpoints are saved at the epoch's end (else at validations).
  bool periodic_checkpoints_at_epoch_end() const;
  // Snapshots the state for the checkpoints `which` (rank 0) and hands it to the writer.
  void save(const std::vector<std::string>& which, const TrainingState& state, bool with_optimizer);
  // Every rank, every step: the stop signal any rank received (collective), or 0.
  int agreed_stop_signal();

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
  std::unique_ptr<CheckpointWriter> writer_;  // rank 0
  int stopped_by_signal_ = 0;
  Timing timing_;
};

}  // namespace trainer::train
