#pragma once
// What Backend::pca_loss reads: a fitted keypoint PCA (train/keypoint_pca.hpp) laid
// out in backend memory. Plain views; compute/pca_loss_table_buffers.hpp owns the
// memory. The layout is the lightning-pose PCA data matrix, built per frame from
// the keypoints by a gather table, so one op serves both pca_singleview (one row
// per frame) and pca_multiview (one row per frame and matched keypoint).
#include "compute/pca_centering.hpp"  // PcaCentering

namespace trainer::compute {

struct PcaLossTables {
  // Backend memory (device pointers on CUDA).
  const float* mean = nullptr;        // [dims], frame pixels
  const float* components = nullptr;  // [num_components, dims], orthonormal rows (kept PCs)
  // [rows_per_frame * dims]: value d of row r is the frame's keypoint coordinate
  // gather[r * dims + d] (an index into its K*2 values: 2k is x, 2k+1 is y).
  // Stored as floats because backends allocate floats; exact below 2^24.
  const float* gather = nullptr;
  int rows_per_frame = 0;
  int dims = 0;            // D, even: columns pair up as (x, y) of one keypoint
  int num_components = 0;  // C
  int num_keypoints = 0;   // K the gather table indexes into (checked by the op)
  float epsilon = 0.f;     // the loss's epsilon, in frame pixels
  // Each row's x values (even columns) and y values (odd columns) are shifted by
  // their centre before the mean is subtracted (compute/pca_centering.hpp).
  PcaCentering centering = PcaCentering::none;
};

}  // namespace trainer::compute
