#pragma once
// One batch as the loader hands it to training: host memory (pinned when CUDA is
// in use), ready to be copied to the compute device.
#include <cstdint>  // std::uint8_t, std::int64_t
#include <vector>   // std::vector

namespace trainer::data {

struct Batch {
  int size = 0;            // frames in this batch (rows below)
  int height = 0;          // network input height (image_resize_dims)
  int width = 0;           // network input width
  int num_keypoints = 0;
  // Normalized network input, float NCHW [size, 3, height, width] (ImageNet mean/std).
  float* images = nullptr;
  // Keypoints in network-input pixels [size, K, 2], NaN where unlabeled or pushed
  // out of the frame by augmentation.
  std::vector<float> keypoints;
  // Global frame index of each row (across shards), for split/prediction output.
  std::vector<std::int64_t> frame_index;
  // 1 for real rows, 0 for rows the distributed sampler padded (excluded from metrics).
  std::vector<std::uint8_t> is_real;
  // Scale from network-input pixels back to the stored frame: x_orig = x * scale_x.
  std::vector<float> scale_x, scale_y;
};

}  // namespace trainer::data
