#pragma once
// lightning-pose HeatmapJSLoss: per plane, 0.5 KL(t' || m) + 0.5 KL(p' || m) with
// m = (t' + p') / 2, p' = p + 1e-10, t' = t + 1e-10.
// CUDA kernel: heatmap_js.cu. Registered in heatmap_loss_registry.cpp.
#include <cmath>  // log (the C function: host and device)

#include "compute/losses/pixel_loss.hpp"  // PixelLoss, kDivergenceEps, TRAINER_HOST_DEVICE

namespace trainer::compute {

struct JsPixel {
  static constexpr const char* kName = "js";
  TRAINER_HOST_DEVICE static double term(double p, double t, double grad_scale, double& grad) {
    const double pe = p + kDivergenceEps, te = t + kDivergenceEps, m = 0.5 * (pe + te);
    const double lm = ::log(m), lp = ::log(pe);
    grad = grad_scale * 0.5 * (lp - lm);
    return 0.5 * te * (::log(te) - lm) + 0.5 * pe * (lp - lm);
  }
};

inline const HeatmapLoss& heatmap_js_loss() {
  static const PixelLoss<JsPixel> loss;
  return loss;
}

}  // namespace trainer::compute
