#pragma once
// The loss-independent CUDA stages of the masked heatmap loss (lightning-pose
// semantics): which planes count, and the total. Between them runs the loss's own
// per-plane pass, HeatmapLoss::planes_cuda (kernels/pixel_loss_kernel.cuh).
// CPU twin: CpuBackend::heatmap_loss. Every launcher only enqueues work on `stream`.
#include <cuda_runtime_api.h>  // cudaStream_t
#include <cstddef>             // std::size_t

namespace trainer::kernels {

// Scratch (in doubles) that a heatmap loss needs: the counted flags from `scratch`
// on, then the per-plane sums from loss_scratch_sums(scratch, planes) on.
std::size_t heatmap_loss_scratch_doubles(int planes);
inline double* loss_scratch_sums(double* scratch, int planes) { return scratch + (planes > 0 ? planes : 1); }

// flags[plane] = 1 where the plane counts: mask != 0, or, with mask null, where
// its target is not all zero (lightning-pose's own rule).
void count_loss_planes(const float* mask, const float* target, int planes, int plane_size,
                       double* flags, cudaStream_t stream);
// loss[0] = kHeatmapLossWeight * (sum of plane losses) / (counted planes), 0 when none count.
void heatmap_loss_total(const double* sums, const double* flags, int planes, float* loss,
                        cudaStream_t stream);

}  // namespace trainer::kernels
