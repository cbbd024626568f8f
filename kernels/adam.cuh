#pragma once
// Fused Adam / AdamW update over a flat parameter buffer (PyTorch semantics):
//   Adam:  g += wd * p                       (L2 penalty folded into the gradient)
//   AdamW: p *= 1 - lr * wd                  (decoupled weight decay)
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// CPU twin: adam_update in src/compute/cpu/.
#include <cuda_runtime_api.h>  // cudaStream_t
#include <cstddef>             // std::size_t

namespace trainer::kernels {

struct AdamStep {
  float lr;
  double beta1, beta2;  // as compute::AdamParams'
  float eps, weight_decay;
  bool decoupled;
  long step;  // 1-based
  // Non-null: the step's compute::AdamFactors are read from this device memory at run
  // time instead of being computed from lr and step (a replayed step graph).
  const float* device_factors;
  // Non-null and nonzero when the kernel runs: no update (16-mixed's skipped step).
  const float* skip;
};

void adam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                 const AdamStep& p, cudaStream_t stream);
// compute::count_adam_step on one thread: unless p.skip is set and nonzero, step[0]
// += 1 and factors (compute::AdamFactors::kCount floats) become that step's, with
// lr[0]; p.lr, p.step and p.device_factors are not used.
void count_adam_step(float* step, float* factors, const float* lr, const AdamStep& p, cudaStream_t stream);

}  // namespace trainer::kernels
