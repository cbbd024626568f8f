// Fused Adam kernel; see adam.cuh.
#include "adam.cuh"

#include "compute/adam_factors.hpp"  // AdamFactors, adam_factors, adam_blend, count_adam_step
#include "launch.cuh"                 // blocks_for, kThreads

namespace trainer::kernels {
namespace {

using detail::blocks_for;
using detail::kThreads;

struct AdamConstants {
  compute::AdamBlend blend;
  float eps, weight_decay;
  compute::AdamFactors factors;  // used when device_factors is null
  const float* device_factors;   // else read from here (AdamFactors' order)
  const float* skip;             // nonzero there: no update
  bool l2;                       // Adam with weight decay: g += wd * p
};

__global__ void adam_kernel(float* p, const float* g, float* m, float* v, std::size_t n,
                            AdamConstants k) {
  if (k.skip && *k.skip != 0.f) return;
  float step_size = k.factors.step_size, inv_sqrt_bc2 = k.factors.inv_sqrt_bc2, decay = k.factors.decay;
  if (k.device_factors) {
    step_size = k.device_factors[0];
    inv_sqrt_bc2 = k.device_factors[1];
    decay = k.device_factors[2];
  }
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(blockDim.x) * gridDim.x) {
    float param = p[i];
    float grad = g[i];
    if (k.l2) grad += k.weight_decay * param;
    param *= decay;
    const float mi = k.blend.beta1 * m[i] + k.blend.one_minus_beta1 * grad;
    const float vi = k.blend.beta2 * v[i] + k.blend.one_minus_beta2 * grad * grad;
    m[i] = mi;
    v[i] = vi;
    const float denom = sqrtf(vi) * inv_sqrt_bc2 + k.eps;
    p[i] = param - step_size * mi / denom;
  }
}

__global__ void count_adam_step_kernel(float* step, float* factors, const float* lr, double beta1, double beta2,
                                       float weight_decay, bool decoupled, const float* skip) {
  compute::count_adam_step(step, factors, *lr, beta1, beta2, weight_decay, decoupled, skip && *skip != 0.f);
}

}  // namespace

void count_adam_step(float* step, float* factors, const float* lr, const AdamStep& p, cudaStream_t s) {
  count_adam_step_kernel<<<1, 1, 0, s>>>(step, factors, lr, p.beta1, p.beta2, p.weight_decay, p.decoupled, p.skip);
}

void adam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                 const AdamStep& p, cudaStream_t s) {
  if (!n) return;
  AdamConstants k{};
  k.blend = compute::adam_blend(p.beta1, p.beta2);
  k.eps = p.eps;
  k.weight_decay = p.weight_decay;
  k.device_factors = p.device_factors;
  k.skip = p.skip;
  if (!p.device_factors) k.factors = compute::adam_factors(p.lr, p.beta1, p.beta2, p.weight_decay, p.decoupled, p.step);
  k.l2 = !p.decoupled && p.weight_decay != 0.f;
  adam_kernel<<<blocks_for(n), kThreads, 0, s>>>(params, grads, m, v, n, k);
}

}  // namespace trainer::kernels
