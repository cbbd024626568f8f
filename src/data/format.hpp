#pragma once
// The trainer's HDF5 dataset format, versions 1 and 2 (docs/DATA.md is the full spec).
//   /images          uint8   [N, H, W, C]  C = 1 or 3 (RGB), one frame per chunk
//   /keypoints       float32 [N, K, 2]     x, y in stored-image pixels, NaN = unlabeled
//   /visibility      uint8   [N, K]        optional (version 2): lightning-pose's visible
//                                          flags 0, 1, 2, or 255 = none (data/visibility.hpp)
//   /keypoint_names  string  [K]
//   /frame_paths     string  [N]           source path of each frame
//   /video_id        int     [N]           optional, with /frame_number: context frames
//   /frame_number    int     [N]
//   /context/images        uint8  [M, H, W, C]  optional: frames that are only context
//   /context/video_id      int    [M]           (lightning-pose loads a labelled frame's
//   /context/frame_number  int    [M]           neighbours t-2..t+2 from its folder even
//   /context/frame_paths   string [M]           when they are not labelled)
//   root attributes: format_version (int), creator (string), source (string),
//                    image_root (string, optional: the folder /frame_paths are
//                    relative to, for an import of one label CSV)
#include <cstdint>  // std::int64_t, std::uint8_t
#include <memory>   // std::unique_ptr
#include <string>   // std::string
#include <vector>   // std::vector

#include "util/h5.hpp"  // h5::Handle
#include "util/h5_atomic_file.hpp"  // h5::AtomicFile

namespace trainer::data {

// The newest version this trainer reads. A file is written as version 2 only when it
// has /visibility: a trainer that would ignore the flags refuses it, and every other
// file stays readable by older trainers.
inline constexpr int kFormatVersion = 2;
inline constexpr int kFormatVersionWithoutVisibility = 1;
inline constexpr const char* kImages = "/images";
inline constexpr const char* kKeypoints = "/keypoints";
inline constexpr const char* kVisibility = "/visibility";
inline constexpr const char* kKeypointNames = "/keypoint_names";
inline constexpr const char* kFramePaths = "/frame_paths";
inline constexpr const char* kVideoId = "/video_id";
inline constexpr const char* kFrameNumber = "/frame_number";
inline constexpr const char* kContextGroup = "/context";
inline constexpr const char* kContextImages = "/context/images";
inline constexpr const char* kContextVideoId = "/context/video_id";
inline constexpr const char* kContextFrameNumber = "/context/frame_number";
inline constexpr const char* kContextFramePaths = "/context/frame_paths";

struct DatasetShape {
  std::int64_t num_frames = 0;
  int height = 0;
  int width = 0;
  int channels = 0;  // 1 (grayscale) or 3 (RGB)
  std::vector<std::string> keypoint_names;
  int num_keypoints() const { return static_cast<int>(keypoint_names.size()); }
};

struct WriterOptions {
  int deflate_level = 0;        // 0: no compression; 1..9: gzip level per frame chunk
  bool with_video_info = false; // write /video_id and /frame_number
  bool with_visibility = false; // write /visibility (each frame's flags given to write_frame)
  std::string source;           // root attribute "source" (e.g. the imported CSV)
  std::string image_root;       // root attribute "image_root" when not empty
};

// Writes one dataset file. Frames are written as they come (any order, each once);
// everything is created under `path.tmp-<pid>` and renamed to `path` by finish()
// (h5::AtomicFile), so a crash or error never leaves a half-written file under the
// final name, and an error (even one in the constructor) removes the temporary file.
class DatasetWriter {
 public:
  DatasetWriter(std::string path, DatasetShape shape, WriterOptions options);
  ~DatasetWriter();  // removes the temporary file if finish() was not reached (file_)
  DatasetWriter(const DatasetWriter&) = delete;
  DatasetWriter& operator=(const DatasetWriter&) = delete;

  // image: H*W*C bytes (row-major, channels last, RGB); keypoints: K*2 floats;
  // visibility: K flags (with_visibility only; null: kNoVisibilityFlag for each).
  void write_frame(std::int64_t index, const std::uint8_t* image, const float* keypoints,
                   const std::string& frame_path, int video_id = 0, int frame_number = 0,
                   const std::uint8_t* visibility = nullptr);
  // A frame that is only the context of labelled frames (needs with_video_info):
  // appended to /context/*, in call order.
  void write_context_frame(const std::uint8_t* image, const std::string& frame_path, int video_id, int frame_number);
  void finish();

 private:
  std::string path_;
  DatasetShape shape_;
  WriterOptions options_;
  std::unique_ptr<h5::AtomicFile> file_;  // before images_: the dataset closes first
  h5::Handle images_;
  std::vector<float> keypoints_;
  std::vector<std::uint8_t> visibility_;  // N*K, with_visibility only
  std::vector<std::string> frame_paths_;
  std::vector<std::int64_t> video_id_, frame_number_;
  std::vector<bool> written_;
  h5::Handle context_images_;  // created on the first context frame, extended by each
  std::vector<std::string> context_paths_;
  std::vector<std::int64_t> context_video_id_, context_frame_number_;
};

}  // namespace trainer::data
