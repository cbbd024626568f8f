// BatchStager (see batch_stager.hpp).
#include "train/batch_stager.hpp"

#include <algorithm>  // std::copy_n
#include <cmath>      // NAN

#include "compute/keypoint_rule.hpp"  // keypoint_has_target, kUniformTargetMark
#include "train/label_target.hpp"     // label_target
#include "util/error.hpp"             // TRAINER_ASSERT

namespace trainer::train {

BatchStager::BatchStager(compute::Backend& backend) : backend_(backend), copy_stream_(backend.create_stream()) {}

BatchStager::~BatchStager() {
  // Queued copies read the pinned staging: let them finish before it is freed
  // (the slots go after this body).
  copy_stream_->synchronize();
}

const StagedBatch& BatchStager::stage(const data::Batch& batch, const StageLayout& layout,
                                      compute::Stream& compute) {
  current_ = (current_ + 1) % int(slots_.size());
  Slot& slot = slots_[std::size_t(current_)];
  // The slot's last copy read its pinned keypoints; it finished when that batch
  // was released, but say so: the host is about to overwrite them.
  if (slot.copied) slot.copied->synchronize();
  StagedBatch& s = slot.staged;
  s.image_shape = {batch.image_count(), 3, batch.height, batch.width};
  s.sequence_rows = batch.sliding_context ? batch.size : 0;
  const int n = batch.size, k = batch.num_keypoints;
  s.heatmap_shape = {n * layout.branches, k, layout.heatmap_height, layout.heatmap_width};
  s.counted = 0;

  std::size_t keypoint_count = 0;
  if (layout.keypoints) {
    keypoint_count = std::size_t(n) * layout.branches * k * 2;
    compute::ensure_capacity(backend_, slot.host_keypoints, keypoint_count);
    float* host = slot.host_keypoints.data();
    // Network-input pixels -> heatmap pixels: x_hm = x * W_out / W_in (no half-pixel shift).
    const float sx = float(layout.heatmap_width) / float(batch.width);
    const float sy = float(layout.heatmap_height) / float(batch.height);
    for (int i = 0; i < n; ++i) {
      const bool drop = layout.drop_padded_rows && !batch.is_real.empty() && !batch.is_real[std::size_t(i)];
      for (int j = 0; j < k; ++j) {
        const std::size_t at = (std::size_t(i) * k + j) * 2;
        const std::size_t flag = std::size_t(i) * k + j;
        const LabelTarget target =
            drop ? LabelTarget::kNone
                 : label_target(batch.visibility.empty() ? data::kNoVisibilityFlag : batch.visibility[flag],
                                !batch.missing.empty() && batch.missing[flag], layout.uniform_missing);
        switch (target) {
          case LabelTarget::kNone: host[at] = host[at + 1] = NAN; break;
          case LabelTarget::kUniform: host[at] = host[at + 1] = compute::kUniformTargetMark; break;
          case LabelTarget::kKeypoint:
            host[at] = batch.keypoints[at] * sx;
            host[at + 1] = batch.keypoints[at + 1] * sy;
            break;
        }
        if (compute::keypoint_has_target(host[at], host[at + 1], layout.heatmap_height, layout.heatmap_width))
          s.counted += layout.branches;
      }
    }
    // A model with several branches (heatmap_mhcrnn) trains each on the same targets.
    const std::size_t per_branch = std::size_t(n) * k * 2;
    for (int br = 1; br < layout.branches; ++br) std::copy_n(host, per_branch, host + br * per_branch);
  }

  // Device side: wait until compute is done with this slot, then copy.
  if (slot.released) copy_stream_->wait(*slot.released);
  compute::ensure_capacity(backend_, slot.images, s.image_shape.numel());
  backend_.upload(slot.images.data(), batch.images, s.image_shape.numel(), *copy_stream_);
  if (keypoint_count) {
    compute::ensure_capacity(backend_, slot.keypoints, keypoint_count);
    backend_.upload(slot.keypoints.data(), slot.host_keypoints.data(), keypoint_count, *copy_stream_);
  }
  slot.copied = copy_stream_->record();
  compute.wait(*slot.copied);
  s.images = slot.images.data();
  s.keypoints = keypoint_count ? slot.keypoints.data() : nullptr;
  return s;
}

void BatchStager::release(compute::Stream& compute) {
  TRAINER_ASSERT(current_ >= 0, "BatchStager::release before stage");
  Slot& slot = slots_[std::size_t(current_)];
  slot.released = compute.record();
  slot.copied->synchronize();
}

}  // namespace trainer::train
