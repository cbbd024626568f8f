#pragma once
// Read side of the dataset format: one or several shard files with the same schema
// seen as one dataset. The global frame index runs across the shards in order.
// Opening reads and validates every shard's metadata (shapes, keypoints, names,
// paths: small); image data is read frame by frame, and a shard's images dataset is
// opened only when one of its frames is first read, so a rank touches only the
// files its frames live in.
#include <cstdint>  // std::int64_t, std::uint8_t
#include <memory>   // std::unique_ptr
#include <mutex>    // std::mutex
#include <string>   // std::string
#include <utility>  // std::pair
#include <vector>   // std::vector

#include "data/format.hpp"  // DatasetShape, dataset names
#include "util/h5.hpp"      // h5::Handle

namespace trainer::data {

// What the configuration expects of the data; 0 / empty: take it from the data.
struct DatasetExpectations {
  int num_keypoints = 0;
  std::vector<std::string> keypoint_names;
};

// Expands glob patterns (data_files = shards/part-*.h5) into a sorted file list;
// a pattern that matches nothing is an error naming it.
std::vector<std::string> expand_data_files(const std::vector<std::string>& patterns);

// Where a data file's labels came from: its root attributes "source" (the imported
// label file, or what made the file) and "image_root" (the folder its frame paths are
// relative to, for an import of one label file); empty when absent.
struct LabelSource {
  std::string source;
  std::string image_root;
};
LabelSource label_source_of(const std::string& path);

class Dataset {
 public:
  // Throws UserError naming the file and dataset for every problem (see docs/DATA.md).
  static Dataset open(const std::vector<std::string>& files, const DatasetExpectations& expect = {});

  Dataset(Dataset&&) noexcept;
  Dataset& operator=(Dataset&&) noexcept;
  ~Dataset();

  std::int64_t size() const { return shape_.num_frames; }
  int height() const { return shape_.height; }
  int width() const { return shape_.width; }
  int channels() const { return shape_.channels; }
  int num_keypoints() const { return shape_.num_keypoints(); }
  const std::vector<std::string>& keypoint_names() const { return shape_.keypoint_names; }
  const DatasetShape& shape() const { return shape_; }
  std::size_t frame_bytes() const { return static_cast<std::size_t>(shape_.height) * shape_.width * shape_.channels; }

  const std::string& frame_path(std::int64_t i) const { return frame_paths_[static_cast<std::size_t>(i)]; }
  const std::vector<std::string>& frame_paths() const { return frame_paths_; }
  // K*2 floats (x, y in stored pixels, NaN = unlabeled).
  const float* keypoints(std::int64_t i) const { return keypoints_.data() + i * 2 * num_keypoints(); }
  // lightning-pose's visible flags (data/visibility.hpp): K bytes of frame i, or null
  // when no shard has /visibility (frames of shards without it have kNoVisibilityFlag).
  bool has_visibility() const { return !visibility_.empty(); }
  const std::uint8_t* visibility(std::int64_t i) const {
    return visibility_.empty() ? nullptr : visibility_.data() + i * num_keypoints();
  }
  // Keypoints flagged 1 (occluded) that have x, y: the flag wins (a uniform target),
  // which lightning-pose warns about.
  std::int64_t occluded_with_coordinates() const;

  // Video membership for context frames: present only when every shard has both
  // /video_id and /frame_number. Video ids are made unique across shards.
  bool has_video_info() const { return !video_id_.empty(); }
  std::int64_t video_id(std::int64_t i) const { return video_id_[static_cast<std::size_t>(i)]; }
  std::int64_t frame_number(std::int64_t i) const { return frame_number_[static_cast<std::size_t>(i)]; }
  // Frames that are only context of labelled ones (/context/*, from `trainer import`),
  // numbered 0..context_size()-1 across the shards; empty without video info.
  std::int64_t context_size() const { return static_cast<std::int64_t>(context_video_id_.size()); }
  std::int64_t context_video_id(std::int64_t j) const { return context_video_id_[static_cast<std::size_t>(j)]; }
  std::int64_t context_frame_number(std::int64_t j) const { return context_frame_number_[static_cast<std::size_t>(j)]; }
  // Reads context-only frame j (H*W*C bytes) into out; thread-safe like read_image.
  void read_context_image(std::int64_t j, std::uint8_t* out) const;

  // Reads frame i (H*W*C bytes, RGB or gray) into out. Safe to call from several
  // threads: HDF5 serialises the read itself. A failure is a UserError naming the
  // file, dataset and frame.
  void read_image(std::int64_t i, std::uint8_t* out) const;

  const std::vector<std::string>& files() const { return files_; }
  // Which file frame i lives in, for messages.
  const std::string& file_of(std::int64_t i) const;

 private:
  struct Shard;
  Dataset();
  std::vector<std::string> files_;
  DatasetShape shape_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<std::int64_t> shard_start_;  // global index of each shard's first frame
  std::vector<float> keypoints_;
  std::vector<std::uint8_t> visibility_;  // N*K, or empty
  std::vector<std::string> frame_paths_;
  std::vector<std::int64_t> video_id_, frame_number_;
  std::vector<std::int64_t> context_video_id_, context_frame_number_;
  std::vector<std::pair<std::size_t, std::int64_t>> context_location_;  // (shard, index in its /context/images)
  std::size_t shard_of(std::int64_t i) const;
};

}  // namespace trainer::data
