// Training step and evaluation (see step.hpp).
#include "train/step.hpp"

#include <algorithm>  // std::copy
#include <cmath>      // std::isnan, std::sqrt

#include "util/error.hpp"  // UserError

namespace trainer::train {

compute::HeatmapLoss parse_heatmap_loss(const std::string& name) {
  if (name == "mse") return compute::HeatmapLoss::mse;
  if (name == "kl") return compute::HeatmapLoss::kl;
  if (name == "js") return compute::HeatmapLoss::js;
  throw UserError("unknown heatmap loss '" + name + "'", "model.heatmap_loss_type is mse, kl or js");
}

namespace {
void ensure(compute::Backend& b, compute::DeviceBuffer& buf, std::size_t count) {
  if (buf.size() < count) buf = compute::DeviceBuffer(b, count);
}
}  // namespace

StepRunner::StepRunner(compute::Backend& backend, compute::Stream& stream, model::PoseModel& model,
                       compute::HeatmapLoss loss)
    : backend_(backend), stream_(stream), model_(model), loss_type_(loss) {
  ensure(backend_, loss_, 1);
}

void StepRunner::upload_images(const data::Batch& batch) {
  if (batch.context_frames != model_.context_frames())
    throw UserError("the batch has " + std::to_string(batch.context_frames) + " frames per row but the model needs " +
                        std::to_string(model_.context_frames()),
                    "model_type heatmap_mhcrnn needs context batches (5 frames per row)");
  image_shape_ = {batch.size * batch.context_frames, 3, batch.height, batch.width};
  ensure(backend_, images_, image_shape_.numel());
  backend_.upload(images_.data(), batch.images, image_shape_.numel(), stream_);
}

void StepRunner::upload(const data::Batch& batch, bool drop_padded_rows) {
  const int n = batch.size, k = batch.num_keypoints;
  if (k != model_.spec().num_keypoints)
    throw UserError("the data has " + std::to_string(k) + " keypoints but the model " +
                    std::to_string(model_.spec().num_keypoints));
  upload_images(batch);
  // A model with several branches (heatmap_mhcrnn) trains each on the same targets.
  const int branches = model_.branches();
  heatmap_shape_ = {n * branches, k, model_.heatmap_size(batch.height), model_.heatmap_size(batch.width)};
  // Keypoints go to heatmap pixels: x_hm = x * W_out / W_in (no half-pixel shift).
  const float sx = float(heatmap_shape_.w) / float(batch.width);
  const float sy = float(heatmap_shape_.h) / float(batch.height);
  host_keypoints_.resize(std::size_t(n) * branches * k * 2);
  for (int i = 0; i < n; ++i) {
    const bool drop = drop_padded_rows && !batch.is_real.empty() && !batch.is_real[i];
    for (int j = 0; j < k; ++j) {
      const std::size_t at = (std::size_t(i) * k + j) * 2;
      host_keypoints_[at] = drop ? NAN : batch.keypoints[at] * sx;
      host_keypoints_[at + 1] = drop ? NAN : batch.keypoints[at + 1] * sy;
    }
  }
  const std::size_t per_branch = std::size_t(n) * k * 2;
  for (int br = 1; br < branches; ++br)
    std::copy(host_keypoints_.begin(), host_keypoints_.begin() + long(per_branch),
              host_keypoints_.begin() + long(br * per_branch));
  ensure(backend_, keypoints_, host_keypoints_.size());
  backend_.upload(keypoints_.data(), host_keypoints_.data(), host_keypoints_.size(), stream_);
  ensure(backend_, targets_, heatmap_shape_.numel());
  ensure(backend_, mask_, std::size_t(heatmap_shape_.n) * k);
  backend_.heatmap_targets(keypoints_.data(), {targets_.data(), heatmap_shape_}, kHeatmapSigma, mask_.data(),
                           stream_);
}

double StepRunner::train_step(const data::Batch& batch, Optimizer& optimizer, GradientSync& sync,
                              bool train_backbone, model::BatchNormSync* bn_sync) {
  upload(batch, false);  // padded rows train too, as with Lightning's DistributedSampler
  model::Context ctx{backend_, stream_, true, bn_sync, &sync};
  auto heatmaps = model_.forward(ctx, {images_.data(), image_shape_});
  ensure(backend_, dpred_, heatmap_shape_.numel());
  float loss_scale = 1.f;
  if (sync.weighs_loss()) {
    // Data-parallel: weigh this rank's mean loss by its share of counted keypoints.
    host_mask_.resize(std::size_t(heatmap_shape_.n) * batch.num_keypoints);
    backend_.download(host_mask_.data(), mask_.data(), host_mask_.size(), stream_);
    stream_.synchronize();
    double counted = 0;
    for (float m : host_mask_) counted += m != 0.f ? 1.0 : 0.0;
    loss_scale = sync.loss_scale(counted);
  }
  backend_.heatmap_loss(heatmaps, {targets_.data(), heatmap_shape_}, mask_.data(), loss_type_, loss_.data(),
                        dpred_.data(), loss_scale, stream_);
  const auto& store = model_.store();
  const auto range = train_backbone ? model::ParameterStore::Range{0, store.parameter_count()}
                                    : store.group_range(model::ParamGroup::head);
  sync.begin(range.offset, range.count, stream_);
  model_.backward(ctx, {dpred_.data(), heatmap_shape_}, train_backbone);
  sync.finish(stream_);
  optimizer.step(stream_);
  float loss = 0;
  backend_.download(&loss, loss_.data(), 1, stream_);
  stream_.synchronize();
  return loss;
}

void StepRunner::keypoints_from_heatmaps(const data::Batch& batch, compute::ConstTensorView heatmaps,
                                         Predictions& out) {
  const int n = batch.size, k = batch.num_keypoints;
  const int rows = heatmaps.shape.n;  // n * branches
  ensure(backend_, coords_, std::size_t(rows) * k * 2);
  ensure(backend_, confidence_, std::size_t(rows) * k);
  backend_.soft_argmax(heatmaps, model_.spec().downsample_factor, kSoftArgmaxTemperature, coords_.data(),
                       confidence_.data(), stream_);
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
  upload(batch, true);  // padded rows are excluded from every metric
  model::Context ctx{backend_, stream_, false, nullptr, nullptr};
  auto heatmaps = model_.forward(ctx, {images_.data(), image_shape_});
  backend_.heatmap_loss(heatmaps, {targets_.data(), heatmap_shape_}, mask_.data(), loss_type_, loss_.data(),
                        nullptr, 1.f, stream_);
  float loss = 0;
  const int n = batch.size, k = batch.num_keypoints;
  host_mask_.resize(std::size_t(heatmap_shape_.n) * k);
  backend_.download(&loss, loss_.data(), 1, stream_);
  backend_.download(host_mask_.data(), mask_.data(), host_mask_.size(), stream_);
  stream_.synchronize();
  EvalSums sums;
  for (float m : host_mask_) sums.loss_count += m;
  if (sums.loss_count > 0) sums.loss_weighted = double(loss) * sums.loss_count;

  Predictions local;
  Predictions& p = predictions ? *predictions : local;
  keypoints_from_heatmaps(batch, heatmaps, p);
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
    }
  }
  return sums;
}

void StepRunner::predict(const data::Batch& batch, Predictions& predictions) {
  upload_images(batch);
  model::Context ctx{backend_, stream_, false, nullptr, nullptr};
  auto heatmaps = model_.forward(ctx, {images_.data(), image_shape_});
  keypoints_from_heatmaps(batch, heatmaps, predictions);
}

}  // namespace trainer::train
