#pragma once
// The interface between trainer and its media module, libtrainer_media.so: image
// codecs (OpenCV imgcodecs) and video files (OpenCV videoio over FFmpeg).
//
// Why a module: those two OpenCV parts bring GDAL, GDCM, poppler, OpenEXR, FFmpeg's
// codecs and GStreamer, about 230 MB of libraries, while training, benchmarking and
// predicting from HDF5 need none of them. The program links only OpenCV's core and
// imgproc and loads the module the first time a command reads or writes an image or
// a video file (data/media_loader.hpp), so a GPU bundle can leave it out.
//
// The module is built from the same sources by the same compiler as the program
// (files under src/data/media/), so C++ types cross the boundary; exceptions do not:
// every entry returns false (or an empty result) where OpenCV fails or throws, and
// the program words the error. kApiVersion and sizeof(Api) catch a stale module.
#include <cstddef>  // std::size_t
#include <memory>   // std::unique_ptr
#include <string>   // std::string
#include <vector>   // std::vector

#include <opencv2/core/mat.hpp>  // cv::Mat (opencv_core is linked by both sides)

namespace trainer::data::media {

inline constexpr int kApiVersion = 1;

// Sequential decoding of one video file with FFmpeg. Not thread-safe: one per thread.
class VideoDecoder {
 public:
  virtual ~VideoDecoder() = default;
  // Opens `path`; false when FFmpeg cannot open or decode it. `packets_only` opens
  // the raw stream: grab() then returns undecoded packets (see packet_is_keyframe).
  virtual bool open(const std::string& path, bool packets_only) = 0;
  virtual void close() = 0;
  // The container's claims (0 when it makes none).
  virtual double frame_count() const = 0;
  virtual double fps() const = 0;
  virtual int width() const = 0;
  virtual int height() const = 0;
  // Decodes the next frame without converting it; false at the end or on damage.
  virtual bool grab() = 0;
  // grab() and the frame as 8-bit BGR (or gray/BGRA as decoded) into `frame`.
  virtual bool read(cv::Mat& frame) = 0;
  // Seeks so that the next grab() returns frame `index`; true only when the decoder
  // reports that it landed exactly there.
  virtual bool seek(long index) = 0;
  // After a grab() in packets_only mode: whether that packet holds a keyframe.
  virtual bool packet_is_keyframe() const = 0;
};

// Writes one video file with FFmpeg.
class VideoEncoder {
 public:
  virtual ~VideoEncoder() = default;
  // `fourcc` empty: H.264 where FFmpeg has the encoder, else MPEG-4 part 2. Otherwise
  // that codec only (four characters, e.g. "MJPG").
  virtual bool open(const std::string& path, double fps, int width, int height, const std::string& fourcc) = 0;
  // One BGR frame of the size given to open().
  virtual bool write(const cv::Mat& bgr) = 0;
  virtual void close() = 0;
};

struct Api {
  int version = kApiVersion;
  std::size_t size = sizeof(Api);
  const char* description = "";  // e.g. "OpenCV 4.6.0 imgcodecs + videoio (FFmpeg)"
  std::unique_ptr<VideoDecoder> (*make_decoder)() = nullptr;
  std::unique_ptr<VideoEncoder> (*make_encoder)() = nullptr;
  // cv::imdecode(bytes, IMREAD_UNCHANGED): false when the bytes are no image it reads.
  bool (*decode_image)(const std::vector<unsigned char>& bytes, cv::Mat& image) = nullptr;
  // cv::imwrite (format from the file extension): false when it cannot write.
  bool (*write_image)(const std::string& path, const cv::Mat& image) = nullptr;
};

}  // namespace trainer::data::media

// The module's one exported symbol.
extern "C" const trainer::data::media::Api* trainer_media_api();
inline constexpr const char* kTrainerMediaApiSymbol = "trainer_media_api";
inline constexpr const char* kTrainerMediaModuleName = "libtrainer_media.so";
