#pragma once
// Heatmap kernels (lightning-pose semantics): Gaussian targets, spatial softmax
// forward/backward, and the soft-argmax with confidence (bicubic x2 upsampling +
// Gaussian pyramid blur, tempered softmax, expectation, 5x5 confidence sum) and its
// backward.
// CPU twins: heatmap_targets, spatial_softmax_* and soft_argmax in src/compute/cpu/.
// The heatmap losses: heatmap_loss.cuh. Every launcher only enqueues work on `stream`.
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

// The soft-argmax (lightning-pose's run_subpixelmaxima) in float, with the CPU
// twin's arithmetic (compute/subpixel_maxima.hpp): heatmaps [planes, h, w]
// upsampled `upsamplings` times (bicubic x2 + pyramid blur), then softmax of
// (temperature * values); coords [planes, 2] = the expectation (x, y) minus
// (2^d - 1) / 2, confidence [planes] (may be null) = the softmax mass in the 5x5
// window around the truncated expectation.
//
// The planes go through in chunks of `chunk_planes`, each chunk's upsampled maps in
// `scratch` (soft_argmax_scratch_floats(chunk_planes, ...) floats, reused chunk
// after chunk in stream order: two buffers of the upsampled size per plane).
// soft_argmax_chunk_planes picks the chunk that keeps the scratch within 64 MiB
// whatever the batch (or one plane, if a single plane needs more: 8 * 4^d * h * w
// bytes); 64 x 64 heatmaps at d = 2 go 128 planes at a time.
int soft_argmax_chunk_planes(int planes, int h, int w, int upsamplings);
std::size_t soft_argmax_scratch_floats(int chunk_planes, int h, int w, int upsamplings);
void soft_argmax(const float* heatmaps, int planes, int h, int w, int upsamplings, float temperature,
                 float* coords, float* confidence, int chunk_planes, float* scratch, cudaStream_t stream);

// The gradient of soft_argmax's coords: dheatmaps [planes, h, w] from dcoords
// [planes, 2]; recomputes the forward. Chunks and scratch as soft_argmax's.
void soft_argmax_backward(const float* heatmaps, int planes, int h, int w, int upsamplings, float temperature,
                          const float* dcoords, float* dheatmaps, int chunk_planes, float* scratch,
                          cudaStream_t stream);

}  // namespace trainer::kernels
