#pragma once
// lightning-pose HeatmapMSELoss: per plane, the sum over pixels of (p - t)^2
// (= the MSE over H*W, times H*W, as lightning-pose scales it).
// CUDA kernel: heatmap_mse.cu. Registered in heatmap_loss_registry.cpp.
#include "compute/losses/pixel_loss.hpp"  // PixelLoss, TRAINER_HOST_DEVICE

namespace trainer::compute {

struct MsePixel {
  static constexpr const char* kName = "mse";
  TRAINER_HOST_DEVICE static double term(double p, double t, double grad_scale, double& grad) {
    const double d = p - t;
    grad = grad_scale * 2.0 * d;
    return d * d;
  }
};

inline const HeatmapLoss& heatmap_mse_loss() {
  static const PixelLoss<MsePixel> loss;
  return loss;
}

}  // namespace trainer::compute
