// Training step and evaluation (see step.hpp).
#include "train/step.hpp"

#include <algorithm>  // std::copy
#include <cmath>      // std::isnan, std::sqrt
#include <cstdint>    // std::int64_t
#include <exception>  // std::exception
#include <optional>   // std::optional

#include "train/unlabeled_maps.hpp"  // unlabeled_maps
#include "util/error.hpp"             // UserError

namespace trainer::train {

StepRunner::StepRunner(compute::Backend& backend, compute::Stream& stream, model::PoseModel& model,
                       const compute::HeatmapLoss& loss)
    : backend_(backend),
      stream_(stream),
      model_(model),
      loss_type_(loss),
      stager_(backend),
      unlabeled_stager_(backend),
      scaler_(backend, stream) {
  compute::ensure_capacity(backend_, loss_, 1);
  compute::ensure_capacity(backend_, loss_sum_, 1);
  loss_host_ = compute::HostBuffer<float>(backend_, 2);
}

StepRunner::~StepRunner() {
  stream_.synchronize();  // a pending loss copy writes into loss_host_, freed after this
}

const StagedBatch& StepRunner::stage(const data::Batch& batch, bool labels, bool drop_padded_rows) {
  if (batch.context_frames != model_.context_frames())
    throw UserError("the batch has " + std::to_string(batch.context_frames) + " frames per row but the model needs " +
                        std::to_string(model_.context_frames()),
                    "model_type heatmap_mhcrnn needs context batches (5 frames per row)");
  if (labels && batch.num_keypoints != model_.spec().num_keypoints)
    throw UserError("the data has " + std::to_string(batch.num_keypoints) + " keypoints but the model " +
                    std::to_string(model_.spec().num_keypoints));
  StageLayout layout;
  layout.heatmap_height = model_.heatmap_size(batch.height);
  layout.heatmap_width = model_.heatmap_size(batch.width);
  layout.branches = model_.branches();
  layout.keypoints = labels;
  layout.drop_padded_rows = drop_padded_rows;
  layout.uniform_missing = uniform_missing_;
  const StagedBatch& staged = stager_.stage(batch, layout, stream_);
  if (labels) {
    const compute::Shape4 hm = staged.heatmap_shape;
    compute::ensure_capacity(backend_, targets_, hm.numel());
    compute::ensure_capacity(backend_, mask_, std::size_t(hm.n) * hm.c);
    backend_.heatmap_targets(staged.keypoints, {targets_.data(), hm}, kHeatmapSigma, mask_.data(), stream_);
  }
  return staged;
}

namespace {

// Passes gradient-ready announcements of a backward pass on to the real sync, after
// adding the gradients held from earlier passes of the same step or accumulation
// group (enqueued on the same stream, so a bucket's all-reduce reads the sum).
class AddHeldGradients final : public model::GradientReadyListener {
 public:
  AddHeldGradients(compute::Backend& backend, float* grads, const float* held, std::size_t range_offset,
                   GradientSync& sync)
      : backend_(backend), grads_(grads), held_(held), range_offset_(range_offset), sync_(sync) {}
  void on_ready(std::size_t offset, std::size_t count, compute::Stream& stream) override {
    backend_.accumulate(held_ + (offset - range_offset_), grads_ + offset, count, stream);
    sync_.on_ready(offset, count, stream);
  }

 private:
  compute::Backend& backend_;
  float* grads_;
  const float* held_;
  std::size_t range_offset_;
  GradientSync& sync_;
};

}  // namespace

void StepRunner::set_unsupervised(UnsupervisedLosses* losses) {
  unsupervised_ = losses;
  if (losses) {
    compute::ensure_capacity(backend_, u_values_, losses->names().size());
    compute::ensure_capacity(backend_, u_sums_, losses->names().size());
    backend_.fill(u_sums_.data(), 0.f, losses->names().size(), stream_);
  }
}

std::vector<double> StepRunner::take_unsupervised_sums() {
  if (!unsupervised_) return {};
  const std::size_t n = unsupervised_->names().size();
  u_sums_host_.resize(n);
  backend_.download(u_sums_host_.data(), u_sums_.data(), n, stream_);
  backend_.fill(u_sums_.data(), 0.f, n, stream_);
  stream_.synchronize();
  return std::vector<double>(u_sums_host_.begin(), u_sums_host_.end());
}

void StepRunner::hold_gradients(std::size_t offset, std::size_t count) {
  const float* grads = model_.store().grads_data() + offset;
  if (held_ == 0) {
    compute::ensure_capacity(backend_, held_grads_, count);
    backend_.copy(held_grads_.data(), grads, count, stream_);
    held_offset_ = offset, held_count_ = count;
  } else {
    TRAINER_ASSERT(offset == held_offset_ && count == held_count_,
                   "the trained parameters changed within an accumulation group");
    backend_.accumulate(grads, held_grads_.data(), count, stream_);
  }
  ++held_;
}

void StepRunner::train_step(const data::Batch& batch, Optimizer& optimizer, GradientSync& sync,
                            bool train_backbone, model::BatchNormSync* bn_sync, const data::Batch* unlabeled,
                            double unsupervised_importance, MicroBatch micro) {
  TRAINER_ASSERT(micro.accumulate >= 1, "accumulate " << micro.accumulate);
  const bool semi = unlabeled != nullptr && unsupervised_ != nullptr;
  // The network's own train-mode randomness for this step's forwards (the labelled
  // batch's, and the unlabelled frames'), on the device before any recorded work.
  prepare_draws(batch, semi ? 2 : 1);
  if (recordable(bn_sync, micro, sync))
    return recorded_train_step(batch, optimizer, sync, train_backbone, semi ? unlabeled : nullptr,
                               unsupervised_importance);
  // During the warm-up (importance 0: lightning-pose's first freeze_until_epoch
  // epochs) the unsupervised terms add nothing: the unlabelled frames only run
  // forward, for the running statistics and the logged losses.
  const bool unsupervised_backward = semi && unsupervised_importance > 0;
  // Lightning divides each micro-batch's loss by accumulate_grad_batches.
  const float micro_scale = 1.f / float(micro.accumulate);
  // Each batch is a new batch for synchronized batch norm: an accumulation group has
  // no finish() between its batches, and its last may be smaller (an epoch's end).
  if (bn_sync) bn_sync->new_batch();
  const StagedBatch& b = stage(batch, true, false);  // padded rows train too, as with Lightning's DistributedSampler
  const StagedBatch* u =
      semi ? &stage_unlabeled(*unlabeled, unsupervised_importance * micro_scale) : nullptr;
  if (recorder_.enabled())
    recorder_.unrecorded_step(recorded_shape(b, u, unsupervised_backward, measure_next_, train_backbone, optimizer));
  const compute::Shape4 hm = b.heatmap_shape;
  const auto& store = model_.store();
  const auto range = train_backbone ? model::ParameterStore::Range{0, store.parameter_count()}
                                    : store.group_range(model::ParamGroup::head);
  // The pass whose backward ends the group all-reduces (with the held gradients
  // added in as each parameter's become final); any other keeps its gradients here.
  LocalGradientSync no_sync;
  std::optional<AddHeldGradients> add_held;
  const auto listener_of_pass = [&](bool final_pass) -> model::GradientReadyListener* {
    if (!final_pass) return &no_sync;
    sync.begin(range.offset, range.count, stream_);
    if (held_ == 0) return &sync;
    TRAINER_ASSERT(range.offset == held_offset_ && range.count == held_count_,
                   "the trained parameters changed within an accumulation group");
    add_held.emplace(backend_, model_.store().grads_data(), held_grads_.data(), range.offset, sync);
    return &*add_held;
  };
  const auto end_pass = [&](bool final_pass) {
    if (!final_pass) return hold_gradients(range.offset, range.count);
    sync.finish(stream_);
    held_ = 0;
  };

  const bool labeled_final = micro.steps && !unsupervised_backward;
  model::GradientReadyListener* listener = listener_of_pass(labeled_final);
  model::Context ctx{backend_, stream_, true, bn_sync, listener};
  auto heatmaps = model_.forward(ctx, {b.images, b.image_shape});
  measured_ = measure_next_;
  measure_next_ = false;
  if (measured_) measure_keypoints(batch, heatmaps);
  compute::ensure_capacity(backend_, dpred_, hm.numel());
  // Data-parallel: weigh this rank's mean loss by its share of counted keypoints
  // (counted on the host while staging: no device round trip).
  const float loss_scale = sync.weighs_loss() ? sync.loss_scale(b.counted) : 1.f;
  backend_.heatmap_loss(heatmaps, {targets_.data(), hm}, mask_.data(), loss_type_, loss_.data(), dpred_.data(),
                        loss_scale * micro_scale, stream_);
  scaler_.scale_gradient(dpred_.data(), hm.numel());
  backend_.accumulate(loss_.data(), loss_sum_.data(), 1, stream_);
  ++losses_summed_;
  model_.backward(ctx, {dpred_.data(), hm}, train_backbone);
  end_pass(labeled_final);
  stager_.release(stream_);
  if (semi) {
    unsupervised_pass(*u, bn_sync, unsupervised_backward ? listener_of_pass(micro.steps) : nullptr, train_backbone);
    if (unsupervised_backward) end_pass(micro.steps);
    unlabeled_stager_.release(stream_);
  }
  if (!micro.steps) return;
  // After the all-reduce, so every rank sees the same gradients and skips alike.
  scaler_.unscale_and_update(model_.store().grads_data() + range.offset, range.count);
  optimizer.step(stream_, scaler_.skip_flag());
}

void StepRunner::prepare_draws(const data::Batch& batch, int forwards) {
  model::Context ctx{backend_, stream_, true};
  model_.prepare_training_step(ctx, {model_seed_, batch.epoch, batch.index, draw_rank_}, forwards);
}

bool StepRunner::recordable(model::BatchNormSync* bn_sync, const MicroBatch& micro, const GradientSync& sync) const {
  // The loss gradient's host factor must be 1 on every step (no per-batch data-parallel
  // weight, no accumulation divisor): a replay cannot change it. (The unsupervised
  // terms' importance and keypoint maps, and 16-mixed's loss scale, are read from
  // device memory.)
  return recorder_.enabled() && stream_.can_record() && bn_sync == nullptr && micro.accumulate == 1 &&
         micro.steps && held_ == 0 && sync.recordable() && !sync.weighs_loss();
}

StepRecorder::Shape StepRunner::recorded_shape(const StagedBatch& b, const StagedBatch* u, bool u_backward,
                                                bool measured, bool train_backbone,
                                                const Optimizer& optimizer) const {
  return StepRecorder::Shape{b.image_shape,          b.heatmap_shape,       train_backbone,
                             optimizer.updated_groups(), u ? u->image_shape : compute::Shape4{},
                             u && u_backward,        measured};
}

namespace {

std::vector<std::int64_t> counter_values(const model::ParameterStore& store) {
  std::vector<std::int64_t> values;
  for (const auto& c : store.counters()) values.push_back(c.value);
  return values;
}

}  // namespace

template <typename Work>
std::unique_ptr<compute::RecordedWork> StepRunner::record_work(Work&& work) {
  try {
    stream_.begin_recording();
    work();
    return stream_.end_recording();
  } catch (const std::exception& e) {
    stream_.abandon_recording();
    recorder_.fail(e.what());
    return nullptr;
  }
}

void StepRunner::recorded_train_step(const data::Batch& batch, Optimizer& optimizer, GradientSync& sync,
                                     bool train_backbone, const data::Batch* unlabeled, double importance) {
  const StagedBatch& b = stage(batch, true, false);
  // The unlabelled frames, their keypoint maps and importance written to the device.
  const StagedBatch* u = unlabeled ? &stage_unlabeled(*unlabeled, importance) : nullptr;
  const bool u_backward = u && importance > 0;
  compute::ensure_capacity(backend_, dpred_, b.heatmap_shape.numel());  // allocations stay outside recordings
  if (u_backward) compute::ensure_capacity(backend_, held_grads_, model_.store().parameter_count());
  measured_ = measure_next_;
  measure_next_ = false;
  if (measured_) prepare_measurement(batch, b.heatmap_shape);
  optimizer.prepare_step(stream_);  // the host half: step counts, lr and bias corrections to the device
  auto& counters = model_.store().counters();
  const StepRecorder::Key key{b.images, u ? u->images : nullptr};
  // Every allocation this step needs happened above (staging, the loss gradient,
  // the measurement, the network's draws): the generation now is the step's.
  const std::uint64_t generation = backend_.released_blocks() + stream_.scratch_reallocations();
  switch (recorder_.decide(recorded_shape(b, u, u_backward, measured_, train_backbone, optimizer), key, generation)) {
    case StepRecorder::Action::run:
      device_step(b, u, u_backward, optimizer, sync, train_backbone, measured_);
      break;
    case StepRecorder::Action::replay: {
      const auto& deltas = recorder_.counter_deltas(key);
      for (std::size_t i = 0; i < counters.size(); ++i) counters[i].value += deltas[i];
      recorder_.recording(key).launch(stream_);
      break;
    }
    case StepRecorder::Action::record: {
      const std::vector<std::int64_t> before = counter_values(model_.store());
      auto work = record_work([&] { device_step(b, u, u_backward, optimizer, sync, train_backbone, measured_); });
      if (!work) {
        // Nothing recorded has run: undo the host side and run this step (and every
        // later one) op by op.
        for (std::size_t i = 0; i < counters.size(); ++i) counters[i].value = before[i];
        prepare_draws(batch, u ? 2 : 1);  // the recorded forwards took the step's draws
        held_ = 0;
        device_step(b, u, u_backward, optimizer, sync, train_backbone, measured_);
        break;
      }
      std::vector<std::int64_t> deltas = counter_values(model_.store());
      for (std::size_t i = 0; i < deltas.size(); ++i) deltas[i] -= before[i];
      work->launch(stream_);
      recorder_.keep(key, std::move(work), std::move(deltas));
      break;
    }
  }
  ++losses_summed_;
  stager_.release(stream_);
  if (u) unlabeled_stager_.release(stream_);
}

void StepRunner::device_step(const StagedBatch& b, const StagedBatch* u, bool u_backward, Optimizer& optimizer,
                             GradientSync& sync, bool train_backbone, bool measure) {
  const compute::Shape4 hm = b.heatmap_shape;
  const auto& store = model_.store();
  const auto range = train_backbone ? model::ParameterStore::Range{0, store.parameter_count()}
                                    : store.group_range(model::ParamGroup::head);
  // With the unlabelled frames' backward to follow, the labelled gradients are held
  // and added back as that pass announces each parameter's (as train_step does).
  LocalGradientSync no_sync;
  if (!u_backward) sync.begin(range.offset, range.count, stream_);
  model::Context ctx{backend_, stream_, true, nullptr, u_backward ? static_cast<model::GradientReadyListener*>(&no_sync)
                                                                  : &sync};
  auto heatmaps = model_.forward(ctx, {b.images, b.image_shape});
  if (measure)
    backend_.soft_argmax(heatmaps, model_.spec().downsample_factor, kSoftArgmaxTemperature, m_coords_.data(),
                         m_confidence_.data(), stream_);
  backend_.heatmap_loss(heatmaps, {targets_.data(), hm}, mask_.data(), loss_type_, loss_.data(), dpred_.data(), 1.f,
                        stream_);
  scaler_.scale_gradient(dpred_.data(), hm.numel());
  backend_.accumulate(loss_.data(), loss_sum_.data(), 1, stream_);
  model_.backward(ctx, {dpred_.data(), hm}, train_backbone);
  if (u) {
    std::optional<AddHeldGradients> add_held;
    if (u_backward) {
      hold_gradients(range.offset, range.count);
      sync.begin(range.offset, range.count, stream_);
      add_held.emplace(backend_, model_.store().grads_data(), held_grads_.data(), range.offset, sync);
    }
    unsupervised_pass(*u, nullptr, add_held ? &*add_held : nullptr, train_backbone);
  }
  sync.finish(stream_);
  held_ = 0;
  scaler_.unscale_and_update(model_.store().grads_data() + range.offset, range.count);
  optimizer.apply_step(stream_, scaler_.skip_flag());
}

const StagedBatch& StepRunner::stage_unlabeled(const data::Batch& frames, double factor) {
  StageLayout layout;
  layout.heatmap_height = model_.heatmap_size(frames.height);
  layout.heatmap_width = model_.heatmap_size(frames.width);
  layout.branches = model_.branches();
  layout.keypoints = false;
  const StagedBatch& u = unlabeled_stager_.stage(frames, layout, stream_);
  // One scale for every frame of a video (lightning-pose's model_to_frame).
  const UnlabeledMaps m = unlabeled_maps(frames.keypoint_unwarp, frames.scale_x.empty() ? 1.f : frames.scale_x[0],
                                         frames.scale_y.empty() ? 1.f : frames.scale_y[0], factor);
  float maps[12];
  std::copy(m.to_frame.m, m.to_frame.m + 6, maps);
  std::copy(m.back.m, m.back.m + 6, maps + 6);
  compute::ensure_capacity(backend_, u_maps_, 12);
  backend_.set_values(u_maps_.data(), maps, 12, stream_);
  scaler_.scale_gradient(u_maps_.data() + 6, 6);  // the gradient's map: 16-mixed scales it as the loss gradient
  return u;
}

void StepRunner::unsupervised_pass(const StagedBatch& u, model::BatchNormSync* bn_sync,
                                   model::GradientReadyListener* listener, bool train_backbone) {
  if (bn_sync) bn_sync->new_batch();
  const compute::ConstTensorView heatmaps = unsupervised_forward(u, bn_sync, listener);
  if (listener) {
    backend_.soft_argmax_backward(heatmaps, model_.spec().downsample_factor, kSoftArgmaxTemperature,
                                  u_dcoords_.data(), {u_dheatmaps_.data(), heatmaps.shape}, stream_);
    model::Context uctx{backend_, stream_, true, bn_sync, listener};
    model_.backward(uctx, {u_dheatmaps_.data(), heatmaps.shape}, train_backbone);
  }
  if (bn_sync) bn_sync->new_batch();  // the next step's labelled forward is another batch
}

compute::ConstTensorView StepRunner::unsupervised_forward(const StagedBatch& u, model::BatchNormSync* bn_sync,
                                                          model::GradientReadyListener* listener) {
  model::Context ctx{backend_, stream_, true, bn_sync, listener};
  auto heatmaps = u.sequence_rows > 0 ? model_.forward_sequence(ctx, {u.images, u.image_shape}, u.sequence_rows)
                                      : model_.forward(ctx, {u.images, u.image_shape});
  const compute::Shape4 hs = heatmaps.shape;
  const int planes = hs.n * hs.c;
  compute::ensure_capacity(backend_, u_coords_, std::size_t(planes) * 2);
  compute::ensure_capacity(backend_, u_confidence_, std::size_t(planes));
  compute::ensure_capacity(backend_, u_dcoords_, std::size_t(planes) * 2);
  compute::ensure_capacity(backend_, u_dheatmaps_, hs.numel());
  const int d = model_.spec().downsample_factor;
  backend_.soft_argmax(heatmaps, d, kSoftArgmaxTemperature, u_coords_.data(), u_confidence_.data(), stream_);
  backend_.fill(u_dcoords_.data(), 0.f, std::size_t(planes) * 2, stream_);
  // The keypoints into the frame where the losses are measured, and their gradient
  // back (stage_unlabeled's maps, read from the device: a replay uses each step's).
  backend_.affine_points(u_coords_.data(), std::size_t(planes), u_maps_.data(), stream_);
  unsupervised_->compute(u_coords_.data(), u_confidence_.data(), hs.n, hs.c, 1.f, 1.f, 1.f, u_values_.data(),
                         u_dcoords_.data(), stream_);
  backend_.affine_points(u_dcoords_.data(), std::size_t(planes), u_maps_.data() + 6, stream_);
  backend_.accumulate(u_values_.data(), u_sums_.data(), unsupervised_->names().size(), stream_);
  return heatmaps;
}

void StepRunner::prepare_measurement(const data::Batch& batch, compute::Shape4 heatmap_shape) {
  const int rows = heatmap_shape.n, k = heatmap_shape.c;  // rows: batch x branches (the context model)
  const std::size_t values = std::size_t(rows) * k;
  compute::ensure_capacity(backend_, m_coords_, values * 2);
  compute::ensure_capacity(backend_, m_confidence_, values);
  m_rows_ = rows, m_batch_ = batch.size, m_keypoints_ = k;
  m_targets_.assign(batch.keypoints.begin(), batch.keypoints.end());
}

void StepRunner::measure_keypoints(const data::Batch& batch, compute::ConstTensorView heatmaps) {
  prepare_measurement(batch, heatmaps.shape);
  backend_.soft_argmax(heatmaps, model_.spec().downsample_factor, kSoftArgmaxTemperature, m_coords_.data(),
                       m_confidence_.data(), stream_);
}

void StepRunner::request_loss() {
  backend_.download(&loss_host_[0], loss_.data(), 1, stream_);
  measuring_copied_ = measured_;
  if (measured_) {
    // The next step may measure too before these are read: they travel with the copy.
    copied_ = MeasuredBatch{m_rows_, m_batch_, m_keypoints_, m_targets_};
    const std::size_t n = std::size_t(m_rows_) * m_keypoints_ * 2;
    compute::ensure_capacity(backend_, m_coords_host_, n);
    backend_.download(&m_coords_host_[0], m_coords_.data(), n, stream_);
  }
  unsupervised_copied_ = unsupervised_ != nullptr;
  if (unsupervised_copied_) {
    const std::size_t n = unsupervised_->names().size();
    compute::ensure_capacity(backend_, u_values_host_, n);
    backend_.download(&u_values_host_[0], u_values_.data(), n, stream_);
  }
  loss_copied_ = stream_.record();
}

StepValues StepRunner::requested_values() {
  TRAINER_ASSERT(loss_copied_ != nullptr, "requested_loss() without request_loss()");
  loss_copied_->synchronize();
  loss_copied_.reset();
  StepValues out;
  out.loss = loss_host_[0];
  if (measuring_copied_) {
    // lightning-pose's RegressionRMSELoss: NaN targets left out; the context model's
    // rows (its two heads stacked) each against their frame's labels.
    double sum = 0, count = 0;
    const MeasuredBatch& m = copied_;
    for (int r = 0; r < m.rows; ++r) {
      const int row = m.batch > 0 ? r % m.batch : r;
      for (int j = 0; j < m.keypoints; ++j) {
        const std::size_t t = (std::size_t(row) * m.keypoints + j) * 2;
        const std::size_t p = (std::size_t(r) * m.keypoints + j) * 2;
        if (t + 1 >= m.targets.size() || std::isnan(m.targets[t]) || std::isnan(m.targets[t + 1])) continue;
        const double dx = double(m_coords_host_[p]) - m.targets[t];
        const double dy = double(m_coords_host_[p + 1]) - m.targets[t + 1];
        sum += std::sqrt(0.5 * (dx * dx + dy * dy));
        count += 1;
      }
    }
    out.rmse = count > 0 ? sum / count : 0;
  }
  if (unsupervised_copied_)
    for (std::size_t t = 0; t < unsupervised_->names().size(); ++t) out.unsupervised.push_back(u_values_host_[t]);
  return out;
}

std::pair<double, long> StepRunner::take_loss_sum() {
  backend_.download(&loss_host_[1], loss_sum_.data(), 1, stream_);
  backend_.fill(loss_sum_.data(), 0.f, 1, stream_);
  stream_.synchronize();
  const std::pair<double, long> result{loss_host_[1], losses_summed_};
  losses_summed_ = 0;
  return result;
}

void StepRunner::keypoints_from_heatmaps(const data::Batch& batch, compute::ConstTensorView heatmaps,
                                         Predictions& out) {
  const int rows = heatmaps.shape.n;  // n * branches
  prepare_keypoints(rows, batch.num_keypoints);
  soft_argmax_keypoints(heatmaps);
  download_keypoints(batch, rows, out);
}

void StepRunner::prepare_keypoints(int rows, int keypoints) {
  compute::ensure_capacity(backend_, coords_, std::size_t(rows) * keypoints * 2);
  compute::ensure_capacity(backend_, confidence_, std::size_t(rows) * keypoints);
}

void StepRunner::soft_argmax_keypoints(compute::ConstTensorView heatmaps) {
  backend_.soft_argmax(heatmaps, model_.spec().downsample_factor, kSoftArgmaxTemperature, coords_.data(),
                       confidence_.data(), stream_);
}

void StepRunner::download_keypoints(const data::Batch& batch, int rows, Predictions& out) {
  const int n = batch.size, k = batch.num_keypoints;
  out.coords.resize(std::size_t(rows) * k * 2);
  out.confidence.resize(std::size_t(rows) * k);
  backend_.download(out.coords.data(), coords_.data(), out.coords.size(), stream_);
  backend_.download(out.confidence.data(), confidence_.data(), out.confidence.size(), stream_);
  stream_.synchronize();
  if (rows != n) model_.merge_branches(n, k, out.coords, out.confidence);
  // Network-input pixels -> original-frame pixels.
  for (int i = 0; i < n; ++i) {
    const float fx = batch.scale_x.empty() ? 1.f : batch.scale_x[i];
    const float fy = batch.scale_y.empty() ? 1.f : batch.scale_y[i];
    for (int j = 0; j < k; ++j) {
      out.coords[(std::size_t(i) * k + j) * 2] *= fx;
      out.coords[(std::size_t(i) * k + j) * 2 + 1] *= fy;
    }
  }
}

EvalSums StepRunner::evaluate(const data::Batch& batch, Predictions* predictions) {
  const StagedBatch& b = stage(batch, true, true);  // padded rows are excluded from every metric
  recorder_.other_work(b.image_shape);  // another image size forgets the recordings
  const compute::Shape4 hm = b.heatmap_shape;
  model::Context ctx{backend_, stream_, false, nullptr, nullptr};
  auto heatmaps = model_.forward(ctx, {b.images, b.image_shape});
  backend_.heatmap_loss(heatmaps, {targets_.data(), hm}, mask_.data(), loss_type_, loss_.data(), nullptr, 1.f,
                        stream_);
  EvalSums sums;
  sums.loss_count = b.counted;
  request_loss();
  const double loss = requested_loss();
  if (sums.loss_count > 0) sums.loss_weighted = loss * sums.loss_count;
  const int n = batch.size, k = batch.num_keypoints;

  Predictions local;
  Predictions& p = predictions ? *predictions : local;
  keypoints_from_heatmaps(batch, heatmaps, p);  // waits for the device
  stager_.release(stream_);
  for (int i = 0; i < n; ++i) {
    if (!batch.is_real.empty() && !batch.is_real[i]) continue;
    const float fx = batch.scale_x.empty() ? 1.f : batch.scale_x[i];
    const float fy = batch.scale_y.empty() ? 1.f : batch.scale_y[i];
    for (int j = 0; j < k; ++j) {
      const std::size_t at = (std::size_t(i) * k + j) * 2;
      const float tx = batch.keypoints[at], ty = batch.keypoints[at + 1];
      if (std::isnan(tx) || std::isnan(ty)) continue;
      const double dx = double(p.coords[at]) - double(tx) * fx;
      const double dy = double(p.coords[at + 1]) - double(ty) * fy;
      // lightning-pose's RMSE: per keypoint, sqrt of the mean over x and y.
      sums.rmse_sum += std::sqrt(0.5 * (dx * dx + dy * dy));
      sums.rmse_count += 1;
      // The same in network-input pixels, where lightning-pose measures it.
      const double ix = dx / fx, iy = dy / fy;
      sums.rmse_input_sum += std::sqrt(0.5 * (ix * ix + iy * iy));
    }
  }
  return sums;
}

void StepRunner::predict_on_device(const StagedBatch& b) {
  model::Context ctx{backend_, stream_, false, nullptr, nullptr};
  soft_argmax_keypoints(b.sequence_rows > 0 ? model_.forward_sequence(ctx, {b.images, b.image_shape}, b.sequence_rows)
                                            : model_.forward(ctx, {b.images, b.image_shape}));
}

void StepRunner::predict(const data::Batch& batch, Predictions& predictions) {
  const StagedBatch& b = stage(batch, false, false);
  const int rows = batch.size * model_.branches();
  prepare_keypoints(rows, batch.num_keypoints);  // allocations stay outside recordings
  if (!recorder_.enabled() || !stream_.can_record()) {
    recorder_.other_work(b.image_shape);
    predict_on_device(b);
  } else {
    StepRecorder::Shape shape;
    shape.images = b.image_shape;
    shape.prediction = true;
    shape.sequence_rows = b.sequence_rows;
    const StepRecorder::Key key{b.images, nullptr};
    const std::uint64_t generation = backend_.released_blocks() + stream_.scratch_reallocations();
    switch (recorder_.decide(shape, key, generation)) {
      case StepRecorder::Action::run:
        predict_on_device(b);
        break;
      case StepRecorder::Action::replay:
        recorder_.recording(key).launch(stream_);
        break;
      case StepRecorder::Action::record: {
        auto work = record_work([&] { predict_on_device(b); });
        if (!work) {  // nothing recorded has run: this prediction (and every later one) op by op
          predict_on_device(b);
          break;
        }
        work->launch(stream_);
        // An evaluation forward leaves the host counters (batch norm's
        // num_batches_tracked) as they were: nothing for a replay to repeat.
        recorder_.keep(key, std::move(work), std::vector<std::int64_t>(model_.store().counters().size(), 0));
        break;
      }
    }
  }
  download_keypoints(batch, rows, predictions);
  stager_.release(stream_);
}

}  // namespace trainer::train
