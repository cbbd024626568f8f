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

// The betas are doubles, as PyTorch's Python floats are: 1 - beta2^t (and 1 - beta2
// below) formed from 0.999f instead of 0.999 are 1.3e-5 off, which showed as that
// error in every second moment of the ViT parity test.
inline AdamFactors adam_factors(float lr, double beta1, double beta2, float weight_decay, bool decoupled, long step) {
  const double bc1 = 1.0 - std::pow(beta1, double(step));
  const double bc2 = 1.0 - std::pow(beta2, double(step));
  AdamFactors f;
  f.step_size = static_cast<float>(double(lr) / bc1);
  f.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  f.decay = decoupled ? static_cast<float>(1.0 - double(lr) * weight_decay) : 1.f;
  return f;
}

// The moments' blend weights, each rounded to float once from the double betas (as
// PyTorch passes beta and 1 - beta to its float kernels).
struct AdamBlend {
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
};

inline AdamBlend adam_blend(double beta1, double beta2) {
  return AdamBlend{float(beta1), float(1.0 - beta1), float(beta2), float(1.0 - beta2)};
}

}  // namespace trainer::compute
