#pragma once
// Heatmap kernels (lightning-pose semantics): Gaussian targets, spatial softmax
// forward/backward, the masked heatmap loss (MSE, KL, JS) forward/backward, and the
// soft-argmax with confidence (bicubic x2 upsampling + Gaussian pyramid blur,
// tempered softmax, expectation, 5x5 confidence sum).
// CPU twins: heatmap_targets, spatial_softmax_*, heatmap_loss and soft_argmax in
// src/compute/cpu/. Every launcher only enqueues work on `stream`.
#include <cuda_runtime_api.h>  // cudaStream_t
#include <cstddef>             // std::size_t

namespace trainer::kernels {

// keypoints [planes, 2] (x, y in heatmap pixels; NaN = unlabeled) -> targets
// [planes, h, w] normalized to sum 1; all zero, and mask 0, for a keypoint with a
// NaN coordinate or outside [-1, W+1] x [-1, H+1]. mask may be null.
void heatmap_targets(const float* keypoints, int planes, int h, int w, float sigma, float* targets,
                     float* mask, cudaStream_t stream);

// y = softmax over each plane of (temperature * x) (kornia: the temperature multiplies).
void spatial_softmax_forward(const float* x, int planes, int plane_size, float temperature,
                             float* y, cudaStream_t stream);
// dx = temperature * y * (dy - sum(y * dy)) per plane.
void spatial_softmax_backward(const float* y, const float* dy, int planes, int plane_size,
                              float temperature, float* dx, cudaStream_t stream);

enum class LossKind { mse, kl, js };

// Scratch (in doubles) that heatmap_loss needs.
std::size_t heatmap_loss_scratch_doubles(int planes);
// loss[0] = 0.5 * mean over the counted planes of the per-plane loss (0 when none
// count); dpred (optional) = d(loss * loss_scale)/d(pred), zero on planes that do
// not count. A plane counts where mask != 0, or, with mask null, where its target
// is not all zero.
void heatmap_loss(const float* pred, const float* target, const float* mask, int planes,
                  int plane_size, LossKind kind, float* loss, float* dpred, float loss_scale,
                  double* scratch, cudaStream_t stream);

// Scratch (in doubles) that soft_argmax needs for `upsamplings` x2 steps.
std::size_t soft_argmax_scratch_doubles(int planes, int h, int w, int upsamplings);
// heatmaps [planes, h, w] upsampled `upsamplings` times (bicubic x2 + pyramid blur,
// in double), then softmax of (temperature * values); coords [planes, 2] = the
// expectation (x, y) minus (2^d - 1) / 2, confidence [planes] (may be null) = the
// softmax mass in the 5x5 window around the truncated expectation.
void soft_argmax(const float* heatmaps, int planes, int h, int w, int upsamplings,
                 float temperature, float* coords, float* confidence, double* scratch,
                 cudaStream_t stream);

}  // namespace trainer::kernels
