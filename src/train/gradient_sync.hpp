#pragma once
// How gradients leave one process. Backward announces each parameter's gradient
// as soon as it is final (reverse registration order, strictly decreasing
// offsets into the flat gradient buffer); an implementation may start a bucket's
// all-reduce right away (PyTorch DDP's reducer). finish() returns once every
// gradient of the step is averaged over ranks; the optimizer runs after it.
// The single-process implementation does nothing.
#include <cstddef>  // std::size_t

#include "compute/stream.hpp"  // compute::Stream
#include "model/hooks.hpp"     // model::GradientReadyListener

namespace trainer::train {

class GradientSync : public model::GradientReadyListener {
 public:
  // Before backward: gradients [offset, offset + count) are what this step
  // produces (the head only when the step skips the backbone's backward; same on
  // every rank).
  virtual void begin(std::size_t offset, std::size_t count, compute::Stream& stream) = 0;
  // After backward: every gradient in the range is final and averaged.
  virtual void finish(compute::Stream& stream) = 0;
  // Whether a step's begin .. finish may be recorded as device work and replayed
  // (model.cuda_graphs): no host work or host state between them that a replay would
  // have to repeat.
  virtual bool recordable() const { return false; }
  // Whether loss_scale() wants this rank's count of loss terms each step.
  virtual bool weighs_loss() const { return false; }
  // Before backward, on every rank (collective): the factor for this rank's loss
  // gradient so that averaging gradients over ranks gives the gradient of the
  // mean over all ranks' counted keypoints, as one process with the global batch
  // would (ranks count different numbers when augmentation pushes keypoints out of
  // the frame): ranks * local_count / global_count.
  virtual float loss_scale(double local_count) {
    (void)local_count;
    return 1.f;
  }
};

class LocalGradientSync final : public GradientSync {
 public:
  void begin(std::size_t, std::size_t, compute::Stream&) override {}
  void on_ready(std::size_t, std::size_t, compute::Stream&) override {}
  void finish(compute::Stream&) override {}
  bool recordable() const override { return true; }
};

// Sums of metrics over ranks (Lightning's sync_dist): every rank calls sum() with
// the same number of values at the same point. Local: nothing to add.
class MetricReducer {
 public:
  virtual ~MetricReducer() = default;
  virtual void sum(double* values, std::size_t count) = 0;
};

class LocalMetricReducer final : public MetricReducer {
 public:
  void sum(double*, std::size_t) override {}
};

}  // namespace trainer::train
