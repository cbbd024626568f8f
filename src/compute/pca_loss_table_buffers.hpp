#pragma once
// Owner of the backend memory behind a PcaLossTables: uploads host tables once
// (the PCA is fitted before training and never changes). Takes plain vectors so
// compute knows nothing of the fit (train/keypoint_pca.hpp builds them).
#include <vector>  // std::vector

#include "compute/backend.hpp"          // Backend, DeviceBuffer, Stream
#include "compute/pca_loss_tables.hpp"  // PcaLossTables

namespace trainer::compute {

class PcaLossTableBuffers {
 public:
  PcaLossTableBuffers() = default;
  // mean [dims], components [num_components * dims], gather [rows_per_frame * dims]
  // with every index in [0, 2 * num_keypoints). Throws SystemError on inconsistent
  // sizes. Waits for the uploads on `s` (once per run), so the caller's vectors
  // may go right away.
  PcaLossTableBuffers(Backend& backend, const std::vector<float>& mean,
                      const std::vector<float>& components, const std::vector<int>& gather,
                      int rows_per_frame, int num_keypoints, float epsilon, PcaCentering centering,
                      Stream& s);
  const PcaLossTables& tables() const { return tables_; }

 private:
  DeviceBuffer mean_, components_, gather_;
  PcaLossTables tables_;
};

}  // namespace trainer::compute
