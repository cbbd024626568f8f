#pragma once
// Frame-exact reading of video files (OpenCV videoio, FFmpeg backend), for
// `trainer predict --video` and unlabelled video batches.
//
// One VideoReader per thread (a decoder is not thread-safe). Reads in increasing
// order decode straight on; any other read seeks to the frame and checks that the
// decoder landed on it, so read(i) gives frame i of a sequential decode.
//
// The frame count comes from the container and can be wrong (variable frame rate,
// a truncated file): a frame the header promises but that does not decode is a
// UserError naming the file and the frame, never a silently shorter output.
#include <cstdint>  // std::uint8_t
#include <memory>   // std::unique_ptr
#include <string>   // std::string
#include <vector>   // std::vector

namespace trainer::data {

struct VideoInfo {
  std::string path;
  long frame_count = 0;  // from the container; read() errors on frames past the real end
  double fps = 0;
  int width = 0;
  int height = 0;
};

// File extensions taken as videos when a folder is given (lower case, with dot).
const std::vector<std::string>& video_extensions();

// `file_or_dir` itself when it is a file; else the videos (by extension) directly in
// the folder, sorted. UserError when the path does not exist or the folder holds none.
std::vector<std::string> list_videos(const std::string& file_or_dir);

class VideoReader {
 public:
  // Opens and checks the file: UserError naming it when it is missing, cannot be
  // decoded, or has no frames / no frame size.
  explicit VideoReader(const std::string& path);
  ~VideoReader();
  VideoReader(VideoReader&&) noexcept;
  VideoReader& operator=(VideoReader&&) noexcept;
  VideoReader(const VideoReader&) = delete;
  VideoReader& operator=(const VideoReader&) = delete;

  const VideoInfo& info() const { return info_; }

  // Frame `index` (0-based) as 8-bit height x width x channels, channels 1 (gray) or
  // 3 (RGB). UserError naming the file and frame when it is out of range or does
  // not decode (truncated or corrupt file).
  void read(long index, int channels, std::vector<std::uint8_t>& out);

  // The number of frames that really decode: the container's count plus the frames
  // that decode after the last one it announces (its count can be too small: MPEG
  // program streams, variable frame rates, estimates from the duration). Decodes from
  // the last announced frame to the end of the file, so it costs about one GOP plus
  // the extra frames. info().frame_count becomes that number; the next read() seeks.
  // UserError when the last announced frame does not decode (a truncated file).
  long count_decodable_frames();

  // How many times read() had to seek (each decodes from the keyframe before its
  // frame): what a reader's plan of reads is judged by.
  long seeks() const { return seeks_; }

  // Takes `frames` as the video's length (a count_decodable_frames() made by another
  // reader of the same file), so read() accepts frames past the container's count.
  void trust_frame_count(long frames);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  VideoInfo info_;
  long seeks_ = 0;
};

// Where the keyframes of `path` are, as frame numbers in increasing order: where a
// seek lands and decoding can start without decoding earlier frames. Read from the
// container's packets (no decoding: about 12 ms for 1,000 frames). The numbers are
// packet positions in decode order, which can differ from display order by a few
// frames with B-frames: good for planning reads, not for exactness (read() is exact
// regardless). Empty when the container does not say.
// `until` >= 0: stop reading packets past that position (a reader of a video's first
// frames need not scan the rest of a long file).
std::vector<long> keyframe_positions(const std::string& path, long until = -1);

}  // namespace trainer::data
