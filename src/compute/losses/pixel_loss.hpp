#pragma once
// PixelLoss<Pixel>: a heatmap loss that is a sum over pixels of one formula,
// written once (Pixel::term, host and device inline) for the CPU loop here and
// the CUDA kernel (kernels/heatmap_loss.cuh, instantiated by the loss's .cu).
// A Pixel is a struct with
//   static constexpr const char* kName;
//   TRAINER_HOST_DEVICE static double term(double p, double t, double grad_scale, double& grad);
// returning the pixel's share of the plane loss and setting grad = grad_scale * d(share)/dp.
#include "compute/host_device.hpp"           // TRAINER_HOST_DEVICE (for the Pixel formulas)
#include "compute/losses/heatmap_loss.hpp"  // HeatmapLoss, LossPlanes

namespace trainer::kernels {
// Defined in kernels/heatmap_loss.cuh; each loss's .cu instantiates it for its Pixel.
template <class Pixel>
void pixel_loss_planes(const compute::LossPlanes& planes, CUstream_st* stream);
}  // namespace trainer::kernels

namespace trainer::compute {

// lightning-pose adds 1e-10 to both heatmaps before the KL / JS divergences.
inline constexpr double kDivergenceEps = 1e-10;

template <class Pixel>
class PixelLoss final : public HeatmapLoss {
 public:
  const char* name() const override { return Pixel::kName; }
  // Arithmetic in double, summed in pixel order (--resume relies on the same bits).
  double plane_cpu(const float* pred, const float* target, long size, double grad_scale,
                   float* dpred) const override {
    double acc = 0;
    for (long j = 0; j < size; ++j) {
      double grad = 0;
      acc += Pixel::term(pred[j], target[j], grad_scale, grad);
      if (dpred) dpred[j] = float(grad);
    }
    return acc;
  }
#ifdef TRAINER_WITH_CUDA
  void planes_cuda(const LossPlanes& planes, CUstream_st* stream) const override {
    kernels::pixel_loss_planes<Pixel>(planes, stream);
  }
#endif
};

}  // namespace trainer::compute
