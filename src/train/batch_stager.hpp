#pragma once
// Moves batches from host to device on a copy stream of their own, so that the
// copy of batch i+1 overlaps the compute of step i (the ARCHITECTURE's "batch
// (host, pinned) -> device" arrow). Two device slots alternate: a slot is
// refilled only after the compute stream has passed the step that used it, and
// the compute stream waits for a slot's copy before reading it. No host wait is
// on the compute path; the host waits only for a copy (so the loader may reuse
// the batch's host memory), never for compute.
//
// Use, once per batch:
//   const StagedBatch& b = stager.stage(batch, layout, compute_stream);
//   ... enqueue the step on compute_stream, reading b.images / b.keypoints ...
//   stager.release(compute_stream);   // before the loader hands out the next batch
#include <array>    // std::array
#include <memory>   // std::unique_ptr
#include <vector>   // std::vector

#include "compute/backend.hpp"  // compute::Backend, DeviceBuffer
#include "compute/host_buffer.hpp"  // compute::HostBuffer
#include "compute/stream.hpp"   // compute::Stream, Event
#include "data/batch.hpp"       // data::Batch

namespace trainer::train {

// How the model wants the labels: heatmap size, and how many branches (model
// heads) train on the same targets.
struct StageLayout {
  int heatmap_height = 0, heatmap_width = 0;
  int branches = 1;
  bool keypoints = true;         // false: images only (prediction)
  bool drop_padded_rows = false; // evaluation: rows the sampler padded get no label
  // lightning-pose's uniform_heatmaps_for_nan_keypoints: a keypoint the data set has
  // no label (and no visible flag) for gets a uniform target and counts in the loss
  // (else: left out). The visible flags decide first (train/label_target.hpp).
  bool uniform_missing = false;
};

struct StagedBatch {
  compute::Shape4 image_shape;    // [N * context_frames, 3, H, W], or [N + 4, 3, H, W] for a sequence
  int sequence_rows = 0;          // > 0: the images are one sequence of N rows' frames (Batch::sliding_context)
  compute::Shape4 heatmap_shape;  // [N * branches, K, h, w]
  const float* images = nullptr;     // device
  const float* keypoints = nullptr;  // device, [N * branches, K, 2] in heatmap pixels
  double counted = 0;  // keypoints that count in the loss (compute/keypoint_rule.hpp)
};

class BatchStager {
 public:
  explicit BatchStager(compute::Backend& backend);
  ~BatchStager();
  BatchStager(const BatchStager&) = delete;
  BatchStager& operator=(const BatchStager&) = delete;

  // Enqueues the batch's copy into the next slot and makes `compute` wait for it.
  const StagedBatch& stage(const data::Batch& batch, const StageLayout& layout, compute::Stream& compute);
  // The step that read the last staged batch is enqueued on `compute`: its slot
  // is free once `compute` passes this point. Returns after the batch's copy is
  // done, so the caller may hand the host batch back to the loader.
  void release(compute::Stream& compute);

 private:
  struct Slot {
    compute::DeviceBuffer images, keypoints;
    compute::HostBuffer<float> host_keypoints;  // pinned staging for the scaled keypoints
    std::unique_ptr<compute::Event> copied, released;
    StagedBatch staged;
  };
  compute::Backend& backend_;
  std::unique_ptr<compute::Stream> copy_stream_;
  std::array<Slot, 2> slots_;
  int current_ = -1;
};

}  // namespace trainer::train
