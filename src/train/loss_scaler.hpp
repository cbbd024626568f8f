#pragma once
// Dynamic loss scaling for precision = 16-mixed, with the semantics of
// torch.cuda.amp.GradScaler (Lightning's default for "16-mixed"): the loss
// gradient is multiplied by scale() so small gradients survive the fp16
// convolutions; after the backward pass (and after the gradient all-reduce, so
// every rank sees the same gradients and takes the same decision) the gradients
// are multiplied by 1/scale and checked for inf/NaN in one pass. A step with a
// non-finite gradient is skipped and the scale halves; after `growth_interval`
// consecutive finite steps it doubles. bf16-mixed and 32 use no scaling
// (enabled() is false, scale() is 1, unscale_and_check does nothing and says
// "step"), as in Lightning.
//
// Usage, in the training step:
//   train::LossScaler scaler(backend.precision());            // once
//   ...
//   backend.heatmap_loss(pred, target, mask, type, loss, dpred,
//                        loss_scale * scaler.scale(), stream);  // scaled loss gradient
//   ... backward, gradient all-reduce ...
//   if (scaler.unscale_and_check(backend, grads, count, stream))
//     optimizer.step(stream);                                  // else: skipped step
//   // checkpoint: scaler.state() / scaler.restore(state)
//
// The host state (scale, growth tracker) lives here; the device only holds the
// 4-byte found-inf flag.
#include <cstddef>  // std::size_t

#include "compute/backend.hpp"    // compute::Backend, DeviceBuffer, Stream
#include "compute/host_buffer.hpp"  // compute::HostBuffer
#include "compute/precision.hpp"  // compute::Precision

namespace trainer::train {

struct LossScalerOptions {  // torch.cuda.amp.GradScaler defaults
  float init_scale = 65536.f;
  float growth_factor = 2.f;
  float backoff_factor = 0.5f;
  int growth_interval = 2000;
};

// What a checkpoint must hold to resume the scaler exactly.
struct LossScalerState {
  float scale = 65536.f;
  int growth_tracker = 0;  // consecutive finite steps since the last change
};

class LossScaler {
 public:
  // Enabled only for Precision::fp16.
  explicit LossScaler(compute::Precision precision, LossScalerOptions options = {});
  LossScaler(const LossScaler&) = delete;
  LossScaler& operator=(const LossScaler&) = delete;

  bool enabled() const { return enabled_; }
  // The factor for the loss gradient (1 when disabled).
  float scale() const { return enabled_ ? state_.scale : 1.f; }

  // When enabled: grads[0..count) *= 1/scale, then the found-inf flag is read
  // back and the scale updated. Returns whether the optimizer step should run
  // (false: some gradient was inf/NaN; the gradients are then garbage and must not
  // be used). Reading the flag synchronizes the stream once per step, exactly as
  // GradScaler does with found_inf.item() (its step() checks the flag on the host);
  // only 16-mixed pays it. When disabled: returns true and touches nothing.
  // `backend` must be the same on every call (the flag lives in its memory).
  bool unscale_and_check(compute::Backend& backend, float* grads, std::size_t count, compute::Stream& stream);

  // The scale update alone (what unscale_and_check does after reading the flag);
  // public for tests and for callers that check several ranges themselves.
  void update(bool found_inf);

  LossScalerState state() const { return state_; }
  void restore(const LossScalerState& state) { state_ = state; }
  long skipped_steps() const { return skipped_; }  // steps skipped since construction

 private:
  bool enabled_;
  LossScalerOptions options_;
  LossScalerState state_;
  long skipped_ = 0;
  compute::Backend* backend_ = nullptr;  // where flag_ and host_flag_ live
  compute::DeviceBuffer flag_;           // one float: found_inf
  compute::HostBuffer<float> host_flag_;  // one float, pinned on CUDA
};

}  // namespace trainer::train
