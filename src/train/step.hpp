#pragma once
// One training step and one evaluation batch on the compute device:
// batch (host) -> upload -> targets -> forward -> loss -> backward -> gradient sync
// -> optimizer. Evaluation adds soft-argmax keypoints and pixel errors.
#include <cstdint>     // std::uint8_t, std::uint64_t
#include <functional>  // std::function
#include <memory>      // std::unique_ptr
#include <string>      // std::string
#include <utility>  // std::pair
#include <vector>   // std::vector

#include "compute/backend.hpp"      // compute::Backend, DeviceBuffer, HeatmapLoss
#include "compute/host_buffer.hpp"  // compute::HostBuffer
#include "data/batch.hpp"           // data::Batch
#include "model/pose_model.hpp"     // model::PoseModel
#include "model/hooks.hpp"          // model::BatchNormSync
#include "train/batch_stager.hpp"   // BatchStager, StagedBatch
#include "train/gradient_sync.hpp"  // GradientSync
#include "train/loss_scaler.hpp"    // LossScaler (16-mixed)
#include "train/optimizer.hpp"      // Optimizer
#include "train/step_recorder.hpp"  // StepRecorder (model.cuda_graphs)
#include "train/unsupervised_losses.hpp"  // UnsupervisedLosses

namespace trainer::train {

// lightning-pose's Gaussian target width, in heatmap pixels.
inline constexpr float kHeatmapSigma = 1.25f;
// Temperature of the soft-argmax that turns heatmaps into keypoints.
inline constexpr float kSoftArgmaxTemperature = 1000.f;

// Sums over real (non-padded) labeled keypoints of one or more evaluated batches.
struct EvalSums {
  double loss_weighted = 0;  // sum of batch loss x counted keypoints
  double loss_count = 0;     // keypoints counted in the loss
  double rmse_sum = 0;       // sum of per-keypoint RMSE in original-frame pixels
  double rmse_count = 0;     // labeled keypoints in the RMSE
  // The same RMSE in network-input (resized) pixels: lightning-pose's
  // val_supervised_rmse, which compares keypoints in the resized frame.
  double rmse_input_sum = 0;
  void add(const EvalSums& o) {
    loss_weighted += o.loss_weighted, loss_count += o.loss_count;
    rmse_sum += o.rmse_sum, rmse_count += o.rmse_count;
    rmse_input_sum += o.rmse_input_sum;
  }
};

// Where a training batch sits in Lightning's gradient accumulation
// (training.accumulate_grad_batches): every micro-batch's loss is divided by
// `accumulate` (Lightning divides the closure loss by it), and only the batch that
// ends a group (`steps`) all-reduces its gradients and runs the optimizer; the others
// keep theirs on this rank (DDP's no_sync), summed into the group's total.
struct MicroBatch {
  int accumulate = 1;  // batches per optimizer step
  bool steps = true;   // this batch ends its group: all-reduce, then the optimizer step
};

// What a logged training step reports (lightning-pose's per-step scalars, models/base.py),
// this rank's values.
struct StepValues {
  double loss = 0;  // the supervised (heatmap) loss, weighted
  // train_supervised_rmse: per labelled keypoint sqrt of the mean of dx^2 and dy^2 of the
  // training forward's soft-argmax keypoints, in network-input pixels, averaged; < 0 when
  // the step was not measured (measure_next_step).
  double rmse = -1;
  std::vector<double> unsupervised;  // each term's unweighted value (UnsupervisedLosses::names())
};

// Keypoints predicted for one batch, host side.
struct Predictions {
  std::vector<float> coords;      // [N, K, 2] in original-frame pixels
  std::vector<float> confidence;  // [N, K]
};

class StepRunner {
 public:
  StepRunner(compute::Backend& backend, compute::Stream& stream, model::PoseModel& model,
             const compute::HeatmapLoss& loss);
  ~StepRunner();
  StepRunner(const StepRunner&) = delete;
  StepRunner& operator=(const StepRunner&) = delete;

  // Enqueues forward + loss + backward + gradient sync + optimizer step on the
  // stream and returns without waiting for the device (a host-staged gradient
  // sync waits inside, by nature; 16-mixed does not: its loss scaler decides on the
  // device whether the optimizer steps). The batch's copy to the device overlaps the
  // previous step; on return the host batch is no longer needed.
  //
  // Semi-supervised (with `unlabeled` frames and set_unsupervised()): the labelled
  // batch runs forward and backward first (lightning-pose's order, which the BN
  // running statistics see), its gradients are set aside, then the unlabelled frames
  // run forward, soft-argmax keypoints, the unsupervised losses (weighted, times
  // `unsupervised_importance`), and backward; each parameter's labelled gradient is
  // added back as backward announces it final, so the bucketed all-reduce still
  // overlaps the backward pass and averages the sum of both terms. With importance
  // 0 (the warm-up) the step is the supervised one plus the unlabelled forward.
  //
  // Gradient accumulation (`micro`): a batch that does not end its group runs no
  // collective of the gradient sync and no optimizer step; its gradients (loss divided
  // by micro.accumulate) are held on this rank and added back, parameter by parameter,
  // into the backward of the batch that ends the group, whose all-reduce then averages
  // the group's sum. Every rank must pass the same `micro` (the same group lengths).
  // The parameter range (backbone frozen or not) must not change within a group.
  void train_step(const data::Batch& batch, Optimizer& optimizer, GradientSync& sync,
                  bool train_backbone, model::BatchNormSync* bn_sync, const data::Batch* unlabeled = nullptr,
                  double unsupervised_importance = 0.0, MicroBatch micro = {});
  // The seed of the network's own train-mode draws (training.rng_seed_model_pt): each
  // step's are keyed by it and the batch's epoch and index (model::StepKey).
  // rank: this process's rank, for the per-sample draws (model::StepKey::rank).
  void set_model_seed(std::uint64_t seed, int rank = 0) {
    model_seed_ = seed;
    draw_rank_ = rank;
  }
  // model.cuda_graphs: from now on, single-process steps, supervised or semi-supervised
  // (a GradientSync that is recordable(), no accumulation, no synchronized batch norm;
  // any precision) on a stream that can record run as recordings of their device work,
  // one per staging slot (pair of slots) and shape (measured steps too), replayed while no device block
  // has been released since and the images keep their size (train/step_recorder.hpp:
  // an epoch's short last batch and validation keep them); the host half of the
  // optimizer step runs before each replay. Predictions record too (predict()).
  // `warn` gets one line if recording fails; the run then goes on unrecorded.
  void record_steps(std::function<void(const std::string&)> warn) { recorder_.enable(std::move(warn)); }
  // Recordings held now (tests and bench step).
  std::size_t recorded_steps() const { return recorder_.recordings(); }
  // What recording did over the run: recordable steps, replays, recordings made.
  const StepRecorder::Counts& recording_counts() const { return recorder_.counts(); }
  // Whether gradients of an unfinished accumulation group are held (a train_step with
  // micro.steps == false and no group-ending step after it yet).
  bool holds_gradients() const { return held_ > 0; }
  // The unsupervised losses of semi-supervised steps (null: supervised only).
  void set_unsupervised(UnsupervisedLosses* losses);
  // Sums of each unsupervised term's value since the last call (waits), one per
  // UnsupervisedLosses::names(); empty when supervised.
  std::vector<double> take_unsupervised_sums();
  // The unsupervised terms (name, weight) in the order of those sums; empty when supervised.
  const std::vector<UnsupervisedTerm>& unsupervised_terms() const {
    static const std::vector<UnsupervisedTerm> none;
    return unsupervised_ ? unsupervised_->terms() : none;
  }
  // Before train_step: that step also measures its training RMSE (the soft-argmax
  // keypoints of its labelled forward against the batch's), for the step's log line.
  void measure_next_step() { measure_next_ = true; }
  // After train_step: starts copying that step's loss (and its measured keypoints and
  // unsupervised values) to the host.
  void request_loss();
  // The loss of the step request_loss() followed; waits for it (and only it).
  double requested_loss() { return requested_values().loss; }
  // Everything request_loss() copied; waits for it (and only it).
  StepValues requested_values();
  // Sum and number of training-step losses since the last call (waits).
  std::pair<double, long> take_loss_sum();
  // The fp16 loss scaler (disabled unless the backend computes in fp16); its
  // state goes into checkpoints. It works on this runner's stream.
  LossScaler& loss_scaler() { return scaler_; }
  // lightning-pose's training.uniform_heatmaps_for_nan_keypoints (off until set): a
  // keypoint missing from the labels gets a uniform target heatmap and counts in the
  // loss, in training and validation alike; off, it is left out of the loss.
  void set_uniform_heatmaps_for_missing(bool on) { uniform_missing_ = on; }

  // Forward only (running BN statistics): loss and RMSE sums over real rows;
  // predictions filled when non-null.
  EvalSums evaluate(const data::Batch& batch, Predictions* predictions = nullptr);
  // Predicts keypoints without labels (no loss). With record_steps() on a stream that
  // can record, predictions of one shape replay a recording per staging slot, as
  // training steps do (after one op-by-op prediction of the shape sizes its buffers).
  void predict(const data::Batch& batch, Predictions& predictions);

 private:
  // Adds the gradients [offset, offset + count) of the pass just run to held_grads_
  // (copies them for the first held pass).
  void hold_gradients(std::size_t offset, std::size_t count);
  // The network's own train-mode draws for the step of `batch` (keyed by the model
  // seed and the batch's epoch and index; its `forwards` training forwards), written
  // to the device before any of its work is recorded; again for a step whose
  // recording failed, whose forward had already taken them.
  void prepare_draws(const data::Batch& batch, int forwards);
  // Whether this step may run as a recording (record_steps).
  bool recordable(model::BatchNormSync* bn_sync, const MicroBatch& micro, const GradientSync& sync) const;
  StepRecorder::Shape recorded_shape(const StagedBatch& b, const StagedBatch* u, bool u_backward, bool measured,
                                     bool train_backbone, const Optimizer& optimizer) const;
  // A recordable step: stages the batch (and a semi-supervised step's unlabelled
  // frames with their maps), runs the optimizer's host half, then runs, records or
  // replays device_step as the recorder decides.
  void recorded_train_step(const data::Batch& batch, Optimizer& optimizer, GradientSync& sync, bool train_backbone,
                           const data::Batch* unlabeled, double importance);
  // The device work of a recordable step: forward, (measured: the keypoints,) loss,
  // backward, (semi-supervised: the unlabelled frames' pass, `u_backward`: with its
  // backward,) the optimizer's device half. Nothing in it may depend on host values
  // that change between steps.
  void device_step(const StagedBatch& b, const StagedBatch* u, bool u_backward, Optimizer& optimizer,
                   GradientSync& sync, bool train_backbone, bool measure);
  // Stages the batch on the device (images; with labels also the keypoints, and
  // the Gaussian targets and loss mask built on the compute stream).
  const StagedBatch& stage(const data::Batch& batch, bool labels, bool drop_padded_rows);
  void keypoints_from_heatmaps(const data::Batch& batch, compute::ConstTensorView heatmaps,
                               Predictions& out);
  // keypoints_from_heatmaps in its three parts, so that a prediction can record the
  // device part: the buffers for `rows` heatmap sets (allocations stay outside
  // recordings), the soft-argmax into them, and the copy to the host (waits) with the
  // branches merged and the coordinates scaled to the batch's frames.
  void prepare_keypoints(int rows, int keypoints);
  void soft_argmax_keypoints(compute::ConstTensorView heatmaps);
  void download_keypoints(const data::Batch& batch, int rows, Predictions& out);
  // A prediction's device work: the evaluation forward and the soft-argmax keypoints.
  void predict_on_device(const StagedBatch& b);
  // `work` (device work only) as a recording, returned unlaunched; null when recording
  // failed: the stream has left capture, nothing of it ran, and the recorder has
  // warned and stopped (the caller undoes its host side and runs the work op by op).
  template <typename Work>
  std::unique_ptr<compute::RecordedWork> record_work(Work&& work);
  // The measured step's soft-argmax keypoints (device) and the batch's labels (host):
  // prepare_measurement is the host half (buffers and labels), measure_keypoints
  // both halves.
  void prepare_measurement(const data::Batch& batch, compute::Shape4 heatmap_shape);
  void measure_keypoints(const data::Batch& batch, compute::ConstTensorView heatmaps);
  // Stages the unlabelled frames, and writes to the device (u_maps_) the map of their
  // keypoints into the frame where the unsupervised losses are measured and the map
  // of the losses' gradient back, times `factor` (the importance) and, in 16-mixed,
  // the loss scale (applied on the device).
  const StagedBatch& stage_unlabeled(const data::Batch& frames, double factor);
  // The unlabelled frames' pass: unsupervised_forward and, with a `listener`, its
  // backward (the listener hears each parameter's gradient become final).
  void unsupervised_pass(const StagedBatch& u, model::BatchNormSync* bn_sync, model::GradientReadyListener* listener,
                         bool train_backbone);
  // The staged unlabelled frames forward (training mode), their soft-argmax keypoints
  // and the unsupervised losses: values summed for the logs, and the keypoints'
  // gradient (through stage_unlabeled's maps) in u_dcoords_. Returns the heatmaps.
  compute::ConstTensorView unsupervised_forward(const StagedBatch& u, model::BatchNormSync* bn_sync,
                                                model::GradientReadyListener* listener);

  compute::Backend& backend_;
  compute::Stream& stream_;
  model::PoseModel& model_;
  const compute::HeatmapLoss& loss_type_;
  bool uniform_missing_ = false;
  BatchStager stager_;
  BatchStager unlabeled_stager_;
  UnsupervisedLosses* unsupervised_ = nullptr;
  // Gradients of backward passes whose all-reduce waits for a later pass: the
  // labelled pass of a semi-supervised step, and the batches of an accumulation
  // group before its last. Relative to held_offset_ (the step's parameter range).
  compute::DeviceBuffer held_grads_;
  std::size_t held_offset_ = 0, held_count_ = 0;
  int held_ = 0;  // passes summed into held_grads_
  compute::DeviceBuffer u_coords_, u_confidence_, u_dcoords_, u_dheatmaps_, u_values_, u_sums_;
  compute::DeviceBuffer u_maps_;  // stage_unlabeled's two AffineMap2D: keypoints to the frame, gradient back
  std::vector<float> u_sums_host_;
  LossScaler scaler_;
  StepRecorder recorder_;
  std::uint64_t model_seed_ = 0;
  int draw_rank_ = 0;
  compute::DeviceBuffer targets_, mask_, loss_, loss_sum_, dpred_, coords_, confidence_;
  compute::HostBuffer<float> loss_host_;  // pinned: [0] requested loss, [1] loss sum
  std::unique_ptr<compute::Event> loss_copied_;
  // The measured step (measure_next_step): its soft-argmax keypoints on the device and,
  // after request_loss, on the host, with the batch's keypoints (network-input pixels).
  bool measure_next_ = false, measured_ = false, measuring_copied_ = false;
  compute::DeviceBuffer m_coords_, m_confidence_;
  compute::HostBuffer<float> m_coords_host_, u_values_host_;
  std::vector<float> m_targets_;  // [n, K, 2]
  int m_rows_ = 0, m_batch_ = 0, m_keypoints_ = 0;
  struct MeasuredBatch {
    int rows = 0, batch = 0, keypoints = 0;
    std::vector<float> targets;
  } copied_;  // of the step request_loss() copied
  bool unsupervised_copied_ = false;
  long losses_summed_ = 0;
};

}  // namespace trainer::train
