#pragma once
// lightning-pose HeatmapKLLoss: per plane, KL(t' || p') = sum t' (log t' - log p')
// with p' = p + 1e-10, t' = t + 1e-10 (kornia kl_div_loss_2d(p', t')).
// CUDA kernel: heatmap_kl.cu. Registered in heatmap_loss_registry.cpp.
#include <cmath>  // log (the C function: host and device)

#include "compute/losses/pixel_loss.hpp"  // PixelLoss, kDivergenceEps, TRAINER_HOST_DEVICE

namespace trainer::compute {

struct KlPixel {
  static constexpr const char* kName = "kl";
  TRAINER_HOST_DEVICE static double term(double p, double t, double grad_scale, double& grad) {
    const double pe = p + kDivergenceEps, te = t + kDivergenceEps;
    grad = -grad_scale * te / pe;
    return te * (::log(te) - ::log(pe));
  }
};

inline const HeatmapLoss& heatmap_kl_loss() {
  static const PixelLoss<KlPixel> loss;
  return loss;
}

}  // namespace trainer::compute
