#pragma once
// The batch-norm backward apply's per-channel terms and its value rule, written once
// for the fp32 kernels, flat and tiled (batchnorm.cu, batchnorm_tiles.cuh), and for
// the 16-bit coefficients (nhwc16.cu). Included by .cu files only.
#include "compute/batchnorm_apply_rule.hpp"  // BatchnormAffine, batchnorm_affine_of, relu_masked

namespace trainer::kernels {
namespace {

// dx = (g - sum_g / count - (x - mean) * invstd^2 * sum_g_xmu / count) * invstd *
// gamma, with g = dy, or (kRelu) dy masked by the ReLU that followed the batch norm,
// the mask recomputed from x.
template <bool kRelu>
struct BackwardApplyRule {
  compute::BatchnormAffine affine;
  float mean_dy, proj, mu, k;
  __device__ static BackwardApplyRule of(const float* mean, const float* invstd, const float* gamma,
                                         const float* beta, const float* reduce, double count, int c, int ch) {
    BackwardApplyRule r;
    r.affine = kRelu ? compute::batchnorm_affine_of(mean, invstd, gamma, beta, ch) : compute::BatchnormAffine{};
    const float is = invstd[ch];
    const float g = gamma ? gamma[ch] : 1.f;
    r.mean_dy = static_cast<float>(reduce[ch] / count);
    r.proj = static_cast<float>(reduce[c + ch] / count) * is * is;
    r.mu = mean[ch];
    r.k = is * g;
    return r;
  }
  __device__ float operator()(float dy, float xv) const {
    const float gradient = kRelu ? compute::relu_masked(dy, xv, affine) : dy;
    return (gradient - mean_dy - (xv - mu) * proj) * k;
  }
};

}  // namespace
}  // namespace trainer::kernels
