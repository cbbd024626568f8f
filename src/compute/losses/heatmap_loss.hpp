#pragma once
// The heatmap loss interface. The backends own what every heatmap loss shares
// (which keypoints count, the 0.5 weight, the mean over counted keypoints, the
// loss scale); a loss only says what one plane costs and its gradient, once for
// the CPU and once for CUDA. Losses are found by name in heatmap_loss_registry.hpp.
struct CUstream_st;  // cudaStream_t, named without the CUDA headers (CPU-only builds have none)

namespace trainer::compute {

// lightning-pose's loss weight 1 / (2 exp(log_weight)) with log_weight 0.
inline constexpr double kHeatmapLossWeight = 0.5;

// The CUDA per-plane pass of a heatmap loss (all pointers in device memory).
struct LossPlanes {
  const float* pred = nullptr;      // [planes, plane_size]
  const float* target = nullptr;    // [planes, plane_size]
  const double* counted = nullptr;  // [planes]: 1 where the plane counts, else 0
  int planes = 0;
  int plane_size = 0;
  float* dpred = nullptr;  // [planes, plane_size], may be null
  float loss_scale = 1.f;
  double* sums = nullptr;  // out [planes]: each plane's loss (0 where it does not count)
};

class HeatmapLoss {
 public:
  virtual ~HeatmapLoss() = default;
  // The name a user picks it by (model.heatmap_loss_type).
  virtual const char* name() const = 0;
  // CPU: the loss of one counted plane of `size` pixels; when dpred is non-null it
  // receives grad_scale * d(plane loss)/d(pred).
  virtual double plane_cpu(const float* pred, const float* target, long size, double grad_scale,
                           float* dpred) const = 0;
#ifdef TRAINER_WITH_CUDA
  // CUDA: enqueues the per-plane sums, and dpred where non-null, scaled by
  // kHeatmapLossWeight * loss_scale / (counted planes), zero on planes that do not count.
  virtual void planes_cuda(const LossPlanes& planes, CUstream_st* stream) const = 0;
#endif
};

}  // namespace trainer::compute
