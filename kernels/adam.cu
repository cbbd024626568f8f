// Fused Adam kernel; see adam.cuh.
#include "adam.cuh"

#include <cmath>  // std::pow, std::sqrt

#include "launch.cuh"  // blocks_for, kThreads

namespace trainer::kernels {
namespace {

using detail::blocks_for;
using detail::kThreads;

struct AdamConstants {
  float lr, beta1, beta2, eps, weight_decay;
  float step_size;        // lr / (1 - beta1^t)
  float inv_sqrt_bc2;     // 1 / sqrt(1 - beta2^t)
  float decay_factor;     // 1 - lr * wd (AdamW) or 1
  bool l2;                // Adam with weight decay: g += wd * p
};

__global__ void adam_kernel(float* p, const float* g, float* m, float* v, std::size_t n,
                            AdamConstants k) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(blockDim.x) * gridDim.x) {
    float param = p[i];
    float grad = g[i];
    if (k.l2) grad += k.weight_decay * param;
    param *= k.decay_factor;
    const float mi = k.beta1 * m[i] + (1.f - k.beta1) * grad;
    const float vi = k.beta2 * v[i] + (1.f - k.beta2) * grad * grad;
    m[i] = mi;
    v[i] = vi;
    const float denom = sqrtf(vi) * k.inv_sqrt_bc2 + k.eps;
    p[i] = param - k.step_size * mi / denom;
  }
}

}  // namespace

void adam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                 const AdamStep& p, cudaStream_t s) {
  if (!n) return;
  // Bias corrections in double on the host, as PyTorch computes them in Python floats.
  const double bc1 = 1.0 - std::pow(double(p.beta1), double(p.step));
  const double bc2 = 1.0 - std::pow(double(p.beta2), double(p.step));
  AdamConstants k{};
  k.lr = p.lr;
  k.beta1 = p.beta1;
  k.beta2 = p.beta2;
  k.eps = p.eps;
  k.weight_decay = p.weight_decay;
  k.step_size = static_cast<float>(double(p.lr) / bc1);
  k.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  k.decay_factor = p.decoupled ? static_cast<float>(1.0 - double(p.lr) * p.weight_decay) : 1.f;
  k.l2 = !p.decoupled && p.weight_decay != 0.f;
  adam_kernel<<<blocks_for(n), kThreads, 0, s>>>(params, grads, m, v, n, k);
}

}  // namespace trainer::kernels
