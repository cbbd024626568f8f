// The unlabelled clip's keypoint and gradient maps (see unlabeled_maps.hpp).
#include "train/unlabeled_maps.hpp"

#include <algorithm>  // std::copy

#include "util/error.hpp"  // TRAINER_ASSERT

namespace trainer::train {

UnlabeledMaps unlabeled_maps(const std::vector<float>& unwarp, float scale_x, float scale_y, double factor) {
  compute::AffineMap2D u;
  if (!unwarp.empty()) {
    TRAINER_ASSERT(unwarp.size() == 6, "keypoint_unwarp holds " << unwarp.size());
    std::copy(unwarp.begin(), unwarp.end(), u.m);
  }
  UnlabeledMaps maps;
  // The frame scale after the unwarp scales its rows (offsets included): S * U.
  for (int j = 0; j < 3; ++j) maps.to_frame.m[j] = scale_x * u.m[j], maps.to_frame.m[3 + j] = scale_y * u.m[3 + j];
  maps.back = maps.to_frame.transposed_linear();
  for (float& v : maps.back.m) v = float(double(v) * factor);
  return maps;
}

}  // namespace trainer::train
