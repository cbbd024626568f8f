#pragma once
// lightning-pose's centering_method for pca_singleview: before the PCA (its fit on
// the labels and the loss on predictions), each frame's selected keypoints are
// shifted by their centre, x and y separately: the mean, or the median as
// torch.quantile(q=0.5) takes it (the average of the two middle values when the
// count is even). Written once for the fit (train/keypoint_pca.cpp), the CPU op and
// the CUDA kernel (kernels/keypoint_losses.cu).
//
// Either centre is c = sum_i w_i v_i with weights that are constant between ties
// (for the median: 1 or 1/2 on the middle values, by stable rank), which is also
// what autograd differentiates: dL/dv_i = g_i - w_i * sum_j g_j, where g is the
// gradient with respect to the centred values.
#include <string>  // std::string
#include <vector>  // std::vector

#include "compute/host_device.hpp"  // TRAINER_HOST_DEVICE

namespace trainer::compute {

enum class PcaCentering : int { none = 0, mean = 1, median = 2 };

// The weight of value i in the centre of the n values v[0], v[stride], ...,
// v[(n - 1) * stride]. Ties rank by position (a stable sort's order).
TRAINER_HOST_DEVICE inline double pca_center_weight(const double* v, int stride, int n, int i,
                                                    PcaCentering centering) {
  if (centering == PcaCentering::none) return 0.0;
  if (centering == PcaCentering::mean) return 1.0 / double(n);
  const double value = v[i * stride];
  int rank = 0;
  for (int j = 0; j < n; ++j) {
    const double other = v[j * stride];
    rank += other < value || (other == value && j < i);
  }
  const int low = (n - 1) / 2, high = n / 2;  // equal when n is odd
  return (rank == low ? 0.5 : 0.0) + (rank == high ? 0.5 : 0.0);
}

// The names lightning-pose's losses.pca_singleview.centering_method takes besides
// null, and the centering a name stands for ("" is none; any other name throws
// SystemError, since the config checks names against the list).
const std::vector<std::string>& pca_centering_names();
PcaCentering pca_centering_from_name(const std::string& name);

}  // namespace trainer::compute
