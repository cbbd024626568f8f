#pragma once
// Network-input batches of consecutive video frames, decoded by worker threads
// ahead of the consumer (prediction on videos, unlabelled batches).
//
// The frames [begin, end) of one video are cut into chunks of whole batches (at
// least 64 frames), and the chunks into runs at the video's keyframes
// (keyframe_positions: a run starts at the first chunk at or after a keyframe). A
// worker takes a whole run and decodes its chunks one after the other with its own
// VideoReader: one seek per run, which decodes less than a chunk in vain, where a
// seek per chunk would decode on average half a group of pictures (x264's default:
// 250 frames) for each 64. Without keyframe positions every chunk is a run. It
// resizes and normalizes every frame as lightning-pose's DALI pipeline does
// (VideoFrameInput::plain), into a chunk slot. The
// consumer gets the batches in frame order. With `context` (heatmap_mhcrnn) row t
// holds frames t-2 .. t+2 of the video, clamped to its first and last frame, and a
// batch of R rows is one sequence of its R + 4 frames (Batch::sliding_context: the
// backbone sees each once); the chunk decodes the two neighbours on either side, so
// any split of a video into ranges gives the same rows as the whole.
//
//   VideoBatches batches(path, 0, n, options);
//   while (const Batch* b = batches.next()) { ... }   // valid until the next call
#include <condition_variable>  // std::condition_variable
#include <cstddef>             // std::size_t
#include <cstdint>             // std::int64_t
#include <exception>           // std::exception_ptr
#include <memory>              // std::unique_ptr
#include <mutex>               // std::mutex
#include <string>              // std::string
#include <thread>              // std::thread
#include <vector>              // std::vector

#include "data/batch.hpp"   // Batch
#include "data/loader.hpp"  // HostAllocator

namespace trainer::data {

struct VideoBatchOptions {
  int batch_size = 32;
  int height = 256;         // network input (image_resize_dims)
  int width = 256;
  int channels = 3;         // decode as RGB (3) or gray (1); the network sees 3 planes either way
  bool context = false;     // 5 frames per row (heatmap_mhcrnn)
  int num_workers = 2;      // decoding threads (at least 1)
  int num_keypoints = 0;    // sizes Batch::keypoints (NaN: videos carry no labels)
  long frame_count = 0;     // the video's length from VideoReader::count_decodable_frames();
                            // 0: the container's count
  HostAllocator allocator;  // empty: default_host_allocator()
};

class VideoBatches {
 public:
  // Opens the video (UserError naming it when it cannot be read) and starts the
  // workers. end < 0: to the video's last frame (options.frame_count, else the
  // container's count).
  VideoBatches(const std::string& path, long begin, long end, VideoBatchOptions options);
  ~VideoBatches();
  VideoBatches(const VideoBatches&) = delete;
  VideoBatches& operator=(const VideoBatches&) = delete;

  long video_frames() const { return video_frames_; }  // frames of the whole video
  double fps() const { return fps_; }
  int frame_height() const { return frame_h_; }
  int frame_width() const { return frame_w_; }
  long begin() const { return begin_; }
  // The seeks the workers' readers made so far (about one per run).
  long seeks();

  // The decoded frames the chunk slots may hold in all (more slots let more workers
  // decode runs at once; at least workers + 1 slots whatever their size).
  static constexpr std::size_t kSlotBytes = std::size_t(1) << 30;
  long end() const { return end_; }

  // The next batch (Batch::frame_index = video frame numbers), or nullptr after the
  // last. Rethrows a worker's error (a frame that does not decode: UserError naming
  // the file and frame).
  const Batch* next();

 private:
  struct Slot;
  void worker_main();
  void release_memory() noexcept;  // the slots and the context sequence
  // The last frames a worker decoded (context chunks: the next chunk of its run starts 4 frames back).
  struct Carry {
    long first = -1, count = 0;
    std::vector<float> frames;
  };
  void decode_chunk(class VideoReader& reader, Slot& slot, long chunk, std::vector<std::uint8_t>& raw,
                    class VideoFrameInput& input, Carry& carry);

  std::string path_;
  VideoBatchOptions options_;
  long video_frames_ = 0, begin_ = 0, end_ = 0;
  double fps_ = 0;
  int frame_h_ = 0, frame_w_ = 0;
  long chunk_frames_ = 0, num_chunks_ = 0;
  std::size_t frame_floats_ = 0;
  std::vector<std::unique_ptr<Slot>> slots_;
  void* context_memory_ = nullptr;  // the assembled sequence [N + 4, 3, H, W] (context only)
  Batch batch_;                     // what next() hands out

  std::mutex mutex_;
  std::condition_variable work_cv_, ready_cv_;
  std::vector<long> run_starts_;  // video_runs()
  long next_run_ = 0;        // next run a worker takes
  long seeks_ = 0;           // the workers' readers' seeks so far
  long released_ = 0;        // chunks before this one have given their slot back
  long current_chunk_ = 0;   // the chunk the consumer reads
  long current_row_ = 0;     // first frame of the chunk not handed out yet (offset in chunk)
  bool holding_ = false;
  std::exception_ptr error_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace trainer::data
