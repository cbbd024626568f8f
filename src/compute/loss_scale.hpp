#pragma once
// Dynamic loss scaling's state in device memory and its once-per-step update, with
// the semantics of torch.cuda.amp.GradScaler (its _amp_update_scale_). The state
// lives on the device so that a 16-mixed step needs no host round trip: the step
// that found an inf or NaN is skipped by the optimizer reading the flag there, and
// a recorded step (CUDA graph) replays the whole decision. One definition here for
// the CPU twin (CpuBackend::update_loss_scale) and the kernel (kernels/cast.cu).
#include <cfloat>  // FLT_MAX

#include "compute/host_device.hpp"  // TRAINER_HOST_DEVICE

namespace trainer::compute {

// Where each value sits in the kLossScaleSlots floats of device memory. The
// counts are floats, exact up to 2^24.
enum LossScaleSlot : int {
  kLossScale = 0,           // the factor of the loss gradient
  kLossScaleInverse,        // 1 / scale, what the gradients are multiplied by
  kLossScaleGrowthTracker,  // consecutive finite steps since the last change
  kLossScaleFoundInf,       // nonzero: this step's gradients had an inf or NaN
  kLossScaleSkipped,        // steps skipped so far
  kLossScaleSlots
};

struct LossScaleRule {  // GradScaler's defaults
  float growth_factor = 2.f;
  float backoff_factor = 0.5f;
  int growth_interval = 2000;
};

// torch forms the reciprocal in double; for the powers of two a scale normally is,
// it is exact either way.
TRAINER_HOST_DEVICE inline float loss_scale_inverse(float scale) { return float(1.0 / double(scale)); }

// After the found-inf check: a step with an inf or NaN halves the scale (backoff)
// and restarts the tracker; growth_interval finite steps in a row double it, unless
// that would overflow (torch keeps the old scale then). The tracker must reach the
// interval exactly, as torch's: a restored tracker beyond it grows nothing until a
// backoff restarts it.
TRAINER_HOST_DEVICE inline void advance_loss_scale(float* state, const LossScaleRule& rule) {
  if (state[kLossScaleFoundInf] != 0.f) {
    state[kLossScale] *= rule.backoff_factor;
    state[kLossScaleGrowthTracker] = 0.f;
    state[kLossScaleSkipped] += 1.f;
  } else if (state[kLossScaleGrowthTracker] + 1.f == float(rule.growth_interval)) {
    const float grown = state[kLossScale] * rule.growth_factor;
    if (grown <= FLT_MAX) state[kLossScale] = grown;
    state[kLossScaleGrowthTracker] = 0.f;
  } else {
    state[kLossScaleGrowthTracker] += 1.f;
  }
  state[kLossScaleInverse] = loss_scale_inverse(state[kLossScale]);
}

}  // namespace trainer::compute
