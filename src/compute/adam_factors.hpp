#pragma once
// The per-step scalars of an Adam / AdamW update, computed once on the host in
// double as PyTorch computes them in Python floats. Both backends use them, either
// passed by value or, with AdamParams::device_factors, read from device memory at
// run time so that a recorded step (CUDA graph) picks up each step's lr and bias
// corrections (the optimizer writes them with Backend::set_values before the step).
#include <cmath>  // std::pow, std::sqrt

namespace trainer::compute {

struct AdamFactors {
  float step_size = 0;     // lr / (1 - beta1^t)
  float inv_sqrt_bc2 = 0;  // 1 / sqrt(1 - beta2^t)
  float decay = 1;         // 1 - lr * wd (AdamW), else 1
  static constexpr int kCount = 3;  // floats in device memory, in this order
};

inline AdamFactors adam_factors(float lr, float beta1, float beta2, float weight_decay, bool decoupled, long step) {
  const double bc1 = 1.0 - std::pow(double(beta1), double(step));
  const double bc2 = 1.0 - std::pow(double(beta2), double(step));
  AdamFactors f;
  f.step_size = static_cast<float>(double(lr) / bc1);
  f.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  f.decay = decoupled ? static_cast<float>(1.0 - double(lr) * weight_decay) : 1.f;
  return f;
}

}  // namespace trainer::compute
