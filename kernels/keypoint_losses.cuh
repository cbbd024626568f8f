#pragma once
// lightning-pose's unsupervised keypoint losses on the GPU: TemporalLoss and
// PCALoss (semantics: compute/backend.hpp, docs/COMPUTE.md). CPU twins:
// CpuBackend::temporal_loss and CpuBackend::pca_loss (cpu_keypoint_losses.cpp).
// Sizes are small (a batch of frames times tens of keypoints), so the kernels
// favour determinism over parallelism: no float atomics, fixed reduction orders,
// and every gradient element written by exactly one thread. Every launcher only
// enqueues work on `stream`.
#include <cuda_runtime_api.h>  // cudaStream_t
#include <cstddef>             // std::size_t

#include "compute/pca_loss_tables.hpp"  // PcaLossTables

namespace trainer::kernels {

// One block: loss[0] and, when dkeypoints is non-null, dkeypoints += grad_scale *
// gradient (each element gathers the two moves it enters).
void temporal_loss(const float* keypoints, const float* confidence, int frames, int num_keypoints,
                   const float* epsilon, float prob_threshold, float scale_x, float scale_y,
                   float* loss, float* dkeypoints, float grad_scale, cudaStream_t stream);

// Scratch (in doubles) that pca_loss needs for `frames` frames of `tables`.
std::size_t pca_loss_scratch_doubles(int frames, const compute::PcaLossTables& tables);
// One block per frame (its rows, residuals and gradient), then one block for the
// total; `scratch` holds pca_loss_scratch_doubles doubles.
void pca_loss(const float* keypoints, int frames, int num_keypoints,
              const compute::PcaLossTables& tables, float scale_x, float scale_y, float* loss,
              float* dkeypoints, float grad_scale, double* scratch, cudaStream_t stream);

}  // namespace trainer::kernels
