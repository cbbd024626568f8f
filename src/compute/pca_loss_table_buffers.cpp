// Uploads a fitted PCA's tables; see pca_loss_table_buffers.hpp.
#include "compute/pca_loss_table_buffers.hpp"

#include "util/error.hpp"  // TRAINER_ASSERT

namespace trainer::compute {

PcaLossTableBuffers::PcaLossTableBuffers(Backend& backend, const std::vector<float>& mean,
                                         const std::vector<float>& components,
                                         const std::vector<int>& gather, int rows_per_frame,
                                         int num_keypoints, float epsilon, PcaCentering centering,
                                         Stream& s) {
  const std::size_t dims = mean.size();
  TRAINER_ASSERT(dims > 0 && dims % 2 == 0 && components.size() % dims == 0 && rows_per_frame > 0 &&
                     gather.size() == std::size_t(rows_per_frame) * dims && num_keypoints > 0,
                 "PCA loss tables: mean " << dims << ", components " << components.size()
                                          << ", gather " << gather.size() << ", rows per frame "
                                          << rows_per_frame << ", keypoints " << num_keypoints);
  std::vector<float> gather_f(gather.size());
  for (std::size_t i = 0; i < gather.size(); ++i) {
    TRAINER_ASSERT(gather[i] >= 0 && gather[i] < 2 * num_keypoints,
                   "PCA loss tables: gather index " << gather[i] << " outside [0, " << 2 * num_keypoints << ")");
    gather_f[i] = float(gather[i]);
  }
  mean_ = DeviceBuffer(backend, dims);
  components_ = DeviceBuffer(backend, components.size());
  gather_ = DeviceBuffer(backend, gather_f.size());
  backend.upload(mean_.data(), mean.data(), dims, s);
  if (!components.empty()) backend.upload(components_.data(), components.data(), components.size(), s);
  backend.upload(gather_.data(), gather_f.data(), gather_f.size(), s);
  // upload() from pageable host memory may return before the copy has read it;
  // gather_f dies here, so wait (once per run).
  s.synchronize();
  tables_.mean = mean_.data();
  tables_.components = components_.data();
  tables_.gather = gather_.data();
  tables_.rows_per_frame = rows_per_frame;
  tables_.dims = int(dims);
  tables_.num_components = int(components.size() / dims);
  tables_.num_keypoints = num_keypoints;
  tables_.epsilon = epsilon;
  tables_.centering = centering;
}

}  // namespace trainer::compute
