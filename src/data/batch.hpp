#pragma once
// One batch as the loader hands it to training: host memory (from the allocator the
// caller gave the loader: pinned when CUDA is in use), ready to be copied to the
// compute device. A batch stays valid until the next Loader::next() or
// Loader::start_epoch() call.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint8_t, std::int64_t
#include <vector>   // std::vector

namespace trainer::data {

struct Batch {
  int size = 0;            // rows (frames) in this batch; the last batch of an epoch may be smaller
  int context_frames = 1;  // 1, or 5 for heatmap_mhcrnn (frames t-2 .. t+2)
  // The unlabelled context batch (heatmap_mhcrnn's video frames): `images` holds one
  // sequence of size + context_frames - 1 consecutive frames, row i being frames
  // i .. i + context_frames - 1, as lightning-pose's DALI sequence (each frame once).
  bool sliding_context = false;
  int height = 0;          // network input height (image_resize_dims)
  int width = 0;           // network input width
  int num_keypoints = 0;
  int epoch = 0;
  std::int64_t index = 0;  // batch number within the epoch

  // Normalized network input, float [size, context_frames, 3, height, width]
  // (with context_frames = 1 this is plain NCHW), or [size + context_frames - 1, 3,
  // height, width] with sliding_context (below). Grayscale is replicated to 3
  // channels; x = (v / 255 - mean[c]) / std[c] with ImageNet mean/std (augment.hpp).
  float* images = nullptr;
  // Keypoints in network-input pixels [size, K, 2] (of the centre frame), NaN
  // where unlabeled or pushed out of the frame by augmentation.
  std::vector<float> keypoints;
  // [size, K]: 1 where the data set has no label for the keypoint (NaN in the file),
  // as opposed to a label that augmentation pushed out of the frame. lightning-pose's
  // uniform_heatmaps_for_nan_keypoints treats the two differently.
  std::vector<std::uint8_t> missing;
  // [size, K]: lightning-pose's visible flags of the labels (data/visibility.hpp),
  // kNoVisibilityFlag where the data has none; empty for batches without labels.
  // train/label_target.hpp turns them, with `missing`, into each keypoint's target.
  std::vector<std::uint8_t> visibility;
  // Global frame index of each row (across shards), for split/prediction output.
  std::vector<std::int64_t> frame_index;
  // 1 for real rows, 0 for rows the distributed sampler padded (exclude them from metrics).
  std::vector<std::uint8_t> is_real;
  // Scale from network-input pixels back to the stored frame: x_orig = x * scale_x
  // (exact for un-augmented batches: val, test, predict).
  std::vector<float> scale_x, scale_y;
  // Unlabelled batches augmented as lightning-pose's DALI pipeline: the map (6
  // values, compute::AffineMap2D's layout) taking network-input pixels of the
  // augmented frames back to those of the un-augmented frames; the same for every
  // row. Empty: not augmented.
  std::vector<float> keypoint_unwarp;

  // Frames in `images`: size * context_frames, or size + context_frames - 1 for a sequence.
  int image_count() const { return sliding_context ? size + context_frames - 1 : size * context_frames; }
  std::size_t image_floats() const { return static_cast<std::size_t>(image_count()) * 3 * height * width; }
  int real_rows() const {
    int n = 0;
    for (int i = 0; i < size; ++i) n += is_real[static_cast<std::size_t>(i)] ? 1 : 0;
    return n;
  }
};

}  // namespace trainer::data
