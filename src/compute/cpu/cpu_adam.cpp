// Adam / AdamW over a flat parameter buffer, torch.optim semantics (torch 1.13,
// amsgrad off):
//   Adam:  g += wd * p                      (L2 penalty through the gradient)
//   AdamW: p *= 1 - lr * wd                 (decoupled decay, before the update)
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
#include <cmath>  // std::sqrt

#include "compute/adam_factors.hpp"  // adam_factors, adam_blend, count_adam_step
#include "compute/cpu/cpu_backend.hpp"
#include "util/error.hpp"

namespace trainer::compute::cpu {

void CpuBackend::adam_update(float* params, const float* grads, float* m, float* v,
                             std::size_t count, const AdamParams& a, Stream&) {
  TRAINER_ASSERT(a.device_factors || a.step >= 1, "adam_update: step must be >= 1 (1-based), got " << a.step);
  if (a.skip && a.skip[0] != 0.f) return;  // the step 16-mixed's loss scaler skips
  enter();
  // "Device" memory is host memory here: the factors set_values wrote, or computed now.
  AdamFactors f;
  if (a.device_factors) {
    f.step_size = a.device_factors[0], f.inv_sqrt_bc2 = a.device_factors[1], f.decay = a.device_factors[2];
  } else {
    f = adam_factors(a.lr, a.beta1, a.beta2, a.weight_decay, a.decoupled_weight_decay, a.step);
  }
  const float step_size = f.step_size, inv_bc2_sqrt = f.inv_sqrt_bc2, decay = f.decay;
  const AdamBlend blend = adam_blend(a.beta1, a.beta2);
  const float b1 = blend.beta1, c1 = blend.one_minus_beta1, b2 = blend.beta2, c2 = blend.one_minus_beta2, eps = a.eps;
  const float l2 = a.decoupled_weight_decay ? 0.f : a.weight_decay;
  const long n = long(count);
#pragma omp parallel for schedule(static) if (n > 32768)
  for (long i = 0; i < n; ++i) {
    float p = params[i] * decay;
    const float g = grads[i] + l2 * params[i];
    const float mi = b1 * m[i] + c1 * g;
    const float vi = b2 * v[i] + c2 * g * g;
    m[i] = mi;
    v[i] = vi;
    p -= step_size * mi / (std::sqrt(vi) * inv_bc2_sqrt + eps);
    params[i] = p;
  }
}

void CpuBackend::count_adam_step(float* step, float* factors, const float* lr, const AdamParams& a, Stream&) {
  compute::count_adam_step(step, factors, lr[0], a.beta1, a.beta2, a.weight_decay, a.decoupled_weight_decay,
                           a.skip && a.skip[0] != 0.f);
}

}  // namespace trainer::compute::cpu
