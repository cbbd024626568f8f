#pragma once
// The fit behind lightning-pose's PCA losses (pca_singleview, pca_multiview):
// KeypointPCA with its NaN-aware PCA (NaNPCA, sklearn's covariance_eigh solver on
// np.ma.cov), the component choice (ComponentChooser) and the empirical epsilon
// (EmpiricalEpsilon), on the host in double precision. Run once before training.
//
// Coordinates: lightning-pose fits the PCA on keypoints in model-input (resized)
// pixels but, since its bounding-box change, applies the loss to predictions in
// original frame pixels: the subspace and epsilon are then in the wrong units
// whenever the resize is not the identity. Here the fit and the loss both use
// ORIGINAL FRAME pixels (Backend::pca_loss scales its network-pixel keypoints).
#include <optional>  // std::optional
#include <string>    // std::string
#include <variant>   // std::variant
#include <vector>    // std::vector

#include "compute/backend.hpp"                // Backend, Stream
#include "compute/pca_centering.hpp"          // PcaCentering
#include "compute/pca_loss_table_buffers.hpp"  // PcaLossTableBuffers

namespace trainer::train {

enum class PcaMode { singleview, multiview };

// lightning-pose's components_to_keep keeps its int-versus-float meaning: an int is
// a number of components, a float a fraction of explained variance (1.0: all).
using ComponentsToKeep = std::variant<int, double>;

struct KeypointPcaSettings {
  PcaMode mode = PcaMode::singleview;
  // singleview: the keypoints used (indices into the K keypoints); unset = all.
  std::optional<std::vector<int>> columns_for_singleview_pca;
  // multiview: one list per view, of equal lengths; entry i of every view is the
  // same body part (lightning-pose's data.mirrored_column_matches).
  std::vector<std::vector<int>> mirrored_column_matches;
  ComponentsToKeep components_to_keep = 0.95;  // lightning-pose PCALoss default
  double empirical_epsilon_percentile = 99.0;  // in [0, 100]
  std::optional<double> epsilon;               // a fixed epsilon, overrides the empirical one
  double empirical_epsilon_multiplier = 1.0;
  // singleview: lightning-pose's centering_method (its multiview PCA ignores it).
  compute::PcaCentering centering = compute::PcaCentering::none;
};

struct KeypointPca {
  PcaMode mode = PcaMode::singleview;
  int num_keypoints = 0;   // K of the labels
  int dims = 0;            // D, columns of the PCA data
  int rows_per_frame = 0;  // 1 (singleview) or the matched keypoints (multiview)
  compute::PcaCentering centering = compute::PcaCentering::none;  // applied to every row
  // The PCA data layout: value d of a frame's row r is its keypoint coordinate
  // gather[r * dims + d] (index into the frame's K*2 values, 2k = x, 2k+1 = y).
  std::vector<int> gather;
  int rows = 0;                                   // frames * rows_per_frame
  int complete_rows = 0;                          // rows without a NaN
  std::vector<double> mean;                       // [D], nanmean per column
  std::vector<double> explained_variance;         // [D], descending, negatives clipped to 0
  std::vector<double> explained_variance_ratio;   // [D]
  int components_kept = 0;                        // C
  std::vector<double> components;                 // [C, D] row-major, sklearn's signs
  double empirical_epsilon = 0;  // percentile of the complete rows' per-pair errors
  double epsilon = 0;            // the loss's: fixed, or empirical * multiplier
  std::vector<std::string> warnings;  // for the caller to print (nothing prints here)
};

// Fits on labelled keypoints [frames, K, 2] in original frame pixels (NaN: not
// labelled). Bad settings or data (too few rows, out-of-range indices, a column
// without two labels, components_to_keep out of range) throw UserError.
KeypointPca fit_keypoint_pca(const std::vector<float>& keypoints, int num_keypoints,
                             const KeypointPcaSettings& settings);

// The PCA data layout of `settings` for K keypoints (validated): rows_per_frame and
// the gather table (see KeypointPca::gather).
std::vector<int> pca_gather_table(const KeypointPcaSettings& settings, int num_keypoints,
                                  int& rows_per_frame);

// lightning-pose's PCA reprojection error metric (metrics.py,
// pca_singleview_reprojection_error / pca_multiview_reprojection_error): for keypoints
// [frames, K, 2] in the fit's pixels, the Euclidean distance in pixels between each
// keypoint the PCA uses and its reprojection from the kept components, as [frames, K]
// (NaN for keypoints outside the PCA and for rows with a NaN). With centering the
// distance is taken between the centred keypoints and their reprojection (lightning-
// pose compares its uncentred predictions with the centred reprojection, which adds
// the frame's centre to the error).
std::vector<double> pca_reprojection_error(const KeypointPca& pca, const std::vector<float>& keypoints);

// The fit's tables in backend memory, for Backend::pca_loss (floats: mean,
// components, epsilon rounded from double).
compute::PcaLossTableBuffers make_pca_loss_tables(compute::Backend& backend, const KeypointPca& pca,
                                                  compute::Stream& s);

}  // namespace trainer::train
