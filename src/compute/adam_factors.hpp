#pragma once
// The per-step scalars of an Adam / AdamW update, computed once on the host in
// double as PyTorch computes them in Python floats. Both backends use them, either
// passed by value or, with AdamParams::device_factors, read from device memory at
// run time so that a recorded step (CUDA graph) picks up each step's lr and bias
// corrections (the optimizer writes them with Backend::set_values before the step).
// In 16-mixed the step count itself lives on the device (count_adam_step below),
// so the kernel computes them there with these same functions.
#include <cmath>  // pow, sqrt

#include "compute/host_device.hpp"  // TRAINER_HOST_DEVICE

namespace trainer::compute {

struct AdamFactors {
  float step_size = 0;     // lr / (1 - beta1^t)
  float inv_sqrt_bc2 = 0;  // 1 / sqrt(1 - beta2^t)
  float decay = 1;         // 1 - lr * wd (AdamW), else 1
  static constexpr int kCount = 3;  // floats in device memory, in this order
};

// The betas are doubles, as PyTorch's Python floats are: 1 - beta2^t (and 1 - beta2
// below) formed from 0.999f instead of 0.999 are 1.3e-5 off, which showed as that
// error in every second moment of the ViT parity test.
TRAINER_HOST_DEVICE inline AdamFactors adam_factors(float lr, double beta1, double beta2, float weight_decay,
                                                    bool decoupled, long step) {
  // The C library's double pow and sqrt on the host, CUDA's (correctly rounded sqrt,
  // pow within 2 ulp of double) on the device: the floats below agree.
  const double bc1 = 1.0 - ::pow(beta1, double(step));
  const double bc2 = 1.0 - ::pow(beta2, double(step));
  AdamFactors f;
  f.step_size = static_cast<float>(double(lr) / bc1);
  f.inv_sqrt_bc2 = static_cast<float>(1.0 / ::sqrt(bc2));
  f.decay = decoupled ? static_cast<float>(1.0 - double(lr) * weight_decay) : 1.f;
  return f;
}

// The moments' blend weights, each rounded to float once from the double betas (as
// PyTorch passes beta and 1 - beta to its float kernels).
struct AdamBlend {
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
};

TRAINER_HOST_DEVICE inline AdamBlend adam_blend(double beta1, double beta2) {
  return AdamBlend{float(beta1), float(1.0 - beta1), float(beta2), float(1.0 - beta2)};
}

// One group's step on the device, for 16-mixed, where only the device knows which
// steps the loss scaler skipped (torch calls no optimizer.step() for them, so they
// do not count): unless `skip`, step[0] += 1 and factors[0..AdamFactors::kCount)
// become that step's. The count is a float, exact up to 2^24 steps.
TRAINER_HOST_DEVICE inline void count_adam_step(float* step, float* factors, float lr, double beta1, double beta2,
                                                float weight_decay, bool decoupled, bool skip) {
  if (skip) return;
  step[0] += 1.f;
  const AdamFactors f = adam_factors(lr, beta1, beta2, weight_decay, decoupled, long(step[0]));
  factors[0] = f.step_size, factors[1] = f.inv_sqrt_bc2, factors[2] = f.decay;
}

}  // namespace trainer::compute
