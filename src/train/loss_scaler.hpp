#pragma once
// Dynamic loss scaling for precision = 16-mixed, with the semantics of
// torch.cuda.amp.GradScaler (Lightning's default for "16-mixed"): the loss
// gradient is multiplied by the scale so small gradients survive the fp16
// convolutions; after the backward pass (and after the gradient all-reduce, so
// every rank sees the same gradients and takes the same decision) the gradients
// are multiplied by 1/scale and checked for inf/NaN in one pass. A step with a
// non-finite gradient is skipped and the scale halves; after `growth_interval`
// consecutive finite steps it doubles. bf16-mixed and 32 use no scaling
// (enabled() is false and every call below does nothing), as in Lightning.
//
// The whole state machine runs on the device (compute/loss_scale.hpp): the scale,
// the growth tracker and the found-inf flag live in device memory, the optimizer
// reads the flag there to skip the step (and not count it), and nothing in a step
// waits for the device. GradScaler reads found_inf on the host every step
// (optimizer.step checks it); this does not, and a 16-mixed step can be recorded
// as a CUDA graph like any other.
//
// Usage, in the training step (all on the scaler's stream):
//   train::LossScaler scaler(backend, stream);                      // once
//   backend.heatmap_loss(..., dpred, ...);  scaler.scale_gradient(dpred, n);
//   ... backward, gradient all-reduce ...
//   scaler.unscale_and_update(grads, count);
//   optimizer.step(stream, scaler.skip_flag());  // skips itself when the flag is set
//   // checkpoint: scaler.state() (waits) / scaler.restore(state)
#include <cstddef>  // std::size_t

#include "compute/backend.hpp"     // compute::Backend, DeviceBuffer, Stream
#include "compute/loss_scale.hpp"  // compute::LossScaleRule

namespace trainer::train {

struct LossScalerOptions {  // torch.cuda.amp.GradScaler defaults
  float init_scale = 65536.f;
  compute::LossScaleRule rule;
};

// What a checkpoint must hold to resume the scaler exactly.
struct LossScalerState {
  float scale = 65536.f;
  int growth_tracker = 0;  // consecutive finite steps since the last change
};

class LossScaler {
 public:
  // Enabled only when backend.precision() is fp16. Its work runs on `stream`, its
  // state in `backend`'s memory; both must outlive it.
  LossScaler(compute::Backend& backend, compute::Stream& stream, LossScalerOptions options = {});
  LossScaler(const LossScaler&) = delete;
  LossScaler& operator=(const LossScaler&) = delete;

  bool enabled() const { return enabled_; }

  // Enqueues x[0..count) *= scale, the scale read when it runs (a loss gradient, or
  // the map that carries the unsupervised losses' gradient).
  void scale_gradient(float* x, std::size_t count);
  // Enqueues, after the all-reduce: grads[0..count) *= 1/scale with the inf/NaN
  // check, then the scale's update. Nothing waits. The gradients of a step found
  // non-finite are garbage: skip_flag() tells the optimizer to leave them.
  void unscale_and_update(float* grads, std::size_t count);
  // Device memory, nonzero after unscale_and_update found an inf or NaN; null when
  // disabled. What Optimizer::step's skip flag takes.
  const float* skip_flag() const { return enabled_ ? state_.data() + compute::kLossScaleFoundInf : nullptr; }

  // The scale and tracker after the work queued so far (waits for the stream when
  // enabled). Disabled: what restore() last set (the defaults at first), so a
  // checkpoint of a 32 or bf16-mixed run carries GradScaler's initial values.
  LossScalerState state();
  // Enqueues the state's upload (a resumed run).
  void restore(const LossScalerState& state);
  // Steps skipped since construction (waits for the stream).
  long skipped_steps();

 private:
  compute::Backend& backend_;
  compute::Stream& stream_;
  bool enabled_;
  LossScalerOptions options_;
  LossScalerState host_state_;  // disabled: the value state() returns
  compute::DeviceBuffer state_;  // enabled: compute::kLossScaleSlots floats
};

}  // namespace trainer::train
