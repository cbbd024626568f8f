#pragma once
// The arithmetic of applying a batch norm, written once for the CPU ops and the
// CUDA kernels (kernels/batchnorm.cu), plain and fused with a residual add and a
// ReLU. The fused backward recomputes the ReLU's mask from the batch norm's input
// instead of reading a stored output, so the forward and the backward of one
// backend must compute the pre-activation with the same roundings: both call
// batchnorm_affine. On the device that is one fused multiply-add (what nvcc made of
// `x * a + b` in the kernels that ran on a GPU); on the host a multiply then an add
// (x86-64's baseline has no FMA instruction), as the CPU ops always computed it.
#include "compute/host_device.hpp"  // TRAINER_HOST_DEVICE

namespace trainer::compute {

// y = x * scale + shift per channel: scale = invstd * gamma, shift = beta - mean * scale;
// gamma and beta may be null (1 and 0).
struct BatchnormAffine {
  float scale = 1, shift = 0;
};
TRAINER_HOST_DEVICE inline BatchnormAffine batchnorm_affine_of(const float* mean, const float* invstd,
                                                               const float* gamma, const float* beta, int ch) {
  BatchnormAffine a;
  a.scale = invstd[ch] * (gamma ? gamma[ch] : 1.f);
#if defined(__CUDA_ARCH__)
  // Written as the one fused multiply-add ptxas made of the expression (FFMA(-scale,
  // mean, beta), read in the SASS of 56466e8), so every kernel that computes the
  // coefficients (a coefficients pass, or each thread of a folded element pass) keeps
  // the same bits whatever a later compiler would contract.
  a.shift = __fmaf_rn(-mean[ch], a.scale, beta ? beta[ch] : 0.f);
#else
  a.shift = (beta ? beta[ch] : 0.f) - mean[ch] * a.scale;
#endif
  return a;
}

TRAINER_HOST_DEVICE inline float batchnorm_affine(float x, BatchnormAffine a) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(x, a.scale, a.shift);
#else
  return x * a.scale + a.shift;
#endif
}

// ReLU as relu_forward computes it: NaN propagates (v != v only for NaN).
TRAINER_HOST_DEVICE inline float relu_of(float v) { return v > 0.f ? v : (v != v ? v : 0.f); }

// The fused forward's output: relu(bn(x)), and relu(bn(x) + residual) (add_relu_forward's order).
TRAINER_HOST_DEVICE inline float batchnorm_relu(float x, BatchnormAffine a) { return relu_of(batchnorm_affine(x, a)); }
TRAINER_HOST_DEVICE inline float batchnorm_add_relu(float x, BatchnormAffine a, float residual) {
  return relu_of(batchnorm_affine(x, a) + residual);
}

// The gradient that reaches the batch norm through its ReLU (no residual): dy where
// the ReLU passed its input (pre-activation > 0, as relu_backward's y > 0), else 0.
TRAINER_HOST_DEVICE inline float relu_masked(float dy, float x, BatchnormAffine a) {
  return batchnorm_affine(x, a) > 0.f ? dy : 0.f;
}

// batchnorm_param_grads for channel ch from this rank's sums of the gradient g and of
// g * (x - mean): dgamma = sum_g_xmu * invstd, dbeta = sum_g (either may be null).
TRAINER_HOST_DEVICE inline void store_param_grads(float sum_g, float sum_g_xmu, float invstd, int ch, float* dgamma,
                                                  float* dbeta) {
  if (dgamma) dgamma[ch] = sum_g_xmu * invstd;
  if (dbeta) dbeta[ch] = sum_g;
}

}  // namespace trainer::compute
