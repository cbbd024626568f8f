#pragma once
// Synthetic demo data: a simple articulated animal (body, head with ears and nose,
// a tail of segments, four legs with coloured paws) in random poses, positions,
// scales and rotations on a noisy background. Every keypoint sits on a small,
// distinctly coloured mark, so a network can learn it. Deterministic for a seed:
// frame i depends only on (seed, i) (or (seed, video, t) for videos).
#include <cstdint>  // std::int64_t, std::uint64_t, std::uint8_t
#include <string>   // std::string
#include <vector>   // std::vector

namespace trainer::data {

struct SynthOptions {
  std::int64_t frames = 300;
  int size = 128;         // square frames, size x size pixels
  int keypoints = 9;      // 1 .. kMaxSynthKeypoints, taken in the order of synth_keypoint_names()
  std::uint64_t seed = 0;
  int videos = 0;         // > 0: frames split into this many videos of smoothly moving poses
  int channels = 3;       // 3 (RGB) or 1 (grayscale)
  int deflate_level = 0;  // HDF5 compression of the frames
};

inline constexpr int kMaxSynthKeypoints = 15;
inline constexpr std::int64_t kMaxSynthFrames = 1000000;

// All keypoint names in order of priority (the first `keypoints` are used).
const std::vector<std::string>& synth_keypoint_names();

struct SynthFrame {
  std::vector<std::uint8_t> image;  // size*size*channels, RGB or gray
  std::vector<float> keypoints;     // K*2, continuous pixel coordinates
  std::string frame_path;           // labeled-data/... as an exported project would have it
  int video_id = 0;
  int frame_number = 0;
};

// Throws UserError for out-of-range options.
void validate(const SynthOptions& options);

// Frame `index` of the dataset described by options.
SynthFrame render_synth_frame(const SynthOptions& options, std::int64_t index);

// Writes the dataset file (atomically: temp file + rename).
void write_synthetic_dataset(const std::string& path, const SynthOptions& options);

// Writes the frames as a DeepLabCut / lightning-pose project: DIR/CollectedData.csv
// and DIR/labeled-data/... PNG files (for the import round-trip and for users).
void export_synthetic_project(const std::string& dir, const SynthOptions& options);

// For the trainer's first run: writes `path` unless it exists. Returns true when it
// generated the file. Call it on rank 0 only; the caller runs a barrier after it.
bool ensure_synthetic_dataset(const std::string& path, const SynthOptions& options);

}  // namespace trainer::data
