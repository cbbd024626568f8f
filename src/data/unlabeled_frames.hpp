#pragma once
// Unlabelled video frames for the unsupervised losses (lightning-pose's DALI train
// pipeline, read with OpenCV on the loader's threads).
//
// What a step gets. The videos are cut into non-overlapping windows of
// `sequence_frames` consecutive frames (DALI's step = sequence_length); each epoch
// visits the windows of all videos once, one window per training step, in runs of
// kWindowsPerRun consecutive windows whose order is shuffled from (seed, epoch), and
// wraps around when the labelled epoch has more steps than there are windows. A run
// holds the windows that start between two keyframes of the video (at most
// kMaxRunFrames frames), so the seek that starts it decodes few frames it does not
// use: a seek decodes from the keyframe before (about 100 ms mid-GOP for the
// 250-frame GOPs of x264's defaults). Every rank draws the same window and decodes only its own
// contiguous share: rank r gets frames [r * F, (r + 1) * F) of it, F = frames per
// rank from the batch plan (lightning-pose's ceil(sequence_length / GPUs)). So the
// union over ranks is one contiguous sequence of F * world frames, which is what
// one process would train on, and every rank has a batch at every step (no uneven
// step count can hang a collective).
//
// heatmap_mhcrnn (`context`): lightning-pose's context batch. A window has
// G * R + 4 frames (R = rows per rank = F - 4, F = the plan's ceil((B - 4) / G) + 4);
// rank r decodes frames [r * R, r * R + F) of it and gets R rows, row i holding
// frames i .. i + 4 (context for the centre frame i + 2), as one sequence of the F
// frames (Batch::sliding_context): the backbone then runs once a frame, as
// lightning-pose's does on its DALI sequence. So the ranks' centre frames
// are the window's frames 2 .. G * R + 1 once each, as on one GPU with B = G * R + 4.
//
// Decoding runs on worker threads ahead of the training loop, each worker a whole
// run at a time with its own decoders (one seek per run); frames are resized, augmented when imgaug asks
// for it, and normalized as lightning-pose's DALI pipeline does (data/video_frame_input.hpp;
// Batch::keypoint_unwarp then maps the predictions back).
//
//   UnlabeledFrames frames(options);
//   frames.start_epoch(epoch, first_step);
//   const Batch& b = frames.next();   // valid until the next call
#include <condition_variable>  // std::condition_variable
#include <cstdint>             // std::uint64_t
#include <exception>           // std::exception_ptr
#include <memory>              // std::unique_ptr
#include <mutex>               // std::mutex
#include <string>              // std::string
#include <thread>              // std::thread
#include <vector>              // std::vector

#include "data/augment.hpp"  // Augmentation
#include "data/batch.hpp"   // Batch
#include "data/loader.hpp"  // HostAllocator

namespace trainer::data {

struct UnlabeledOptions {
  std::vector<std::string> videos;  // video files (list_videos of data.video_dir)
  int frames_per_rank = 0;          // F: the batch plan's per-rank share of a sequence
  bool context = false;             // heatmap_mhcrnn: rows of 5 frames, F - 4 rows per rank
  int rank = 0;
  int world_size = 1;
  int height = 256;                 // network input (image_resize_dims)
  int width = 256;
  int channels = 3;                 // decoded as RGB (3) or gray (1): the labelled frames' channels
  int num_keypoints = 0;            // sizes Batch::keypoints (all NaN: no labels)
  // training.imgaug: dlc and dlc-top-down augment the frames as lightning-pose's DALI
  // pipeline does (data/unlabeled_augment.hpp); anything else resizes only.
  Augmentation imgaug = Augmentation::kNone;
  std::uint64_t seed = 0;           // rng_seed_data_pt
  int num_workers = 1;              // decoding threads (at least 1)
  HostAllocator allocator;          // empty: default_host_allocator()
};

// One window: frames [first, first + length) of video `video`.
struct UnlabeledWindow {
  int video = 0;
  long first = 0;
};

class UnlabeledFrames {
 public:
  // Consecutive windows decoded in a row (one seek): those between two keyframes,
  // at most this many frames; kWindowsPerRun windows when the keyframes are unknown.
  static constexpr long kMaxRunFrames = 512;
  static constexpr std::size_t kWindowsPerRun = 8;

  // Opens every video (UserError naming one that cannot be read or is shorter than a
  // sequence of frames_per_rank * world_size frames) and starts the workers.
  explicit UnlabeledFrames(UnlabeledOptions options);
  ~UnlabeledFrames();
  UnlabeledFrames(const UnlabeledFrames&) = delete;
  UnlabeledFrames& operator=(const UnlabeledFrames&) = delete;

  int sequence_frames() const { return sequence_; }  // F * G, or (F - 4) * G + 4 with context
  int rows_per_rank() const { return rows_; }        // F, or F - 4 with context
  long windows() const { return long(windows_.size()); }
  const std::vector<long>& video_frame_counts() const { return frame_counts_; }

  // The window of step `step` of epoch `epoch` (the same on every rank).
  UnlabeledWindow window(int epoch, long step) const;

  // Restarts decoding at step `first_step` of `epoch` (a resumed run starts mid-epoch).
  void start_epoch(int epoch, long first_step = 0);
  // This rank's frames of the next step's window; rethrows a worker's error (a frame
  // that does not decode: UserError naming the file and frame).
  const Batch& next();

 private:
  struct Slot;
  // One pass over every window (indices into windows_), in runs; run_ends[i] = the
  // position just past the run of position i.
  std::vector<long> epoch_order(int epoch, std::vector<long>* run_ends) const;
  void worker_main();
  void shut_down() noexcept;  // stops and joins the workers, frees the slots
  void decode(class VideoReader& reader, const UnlabeledWindow& w, int epoch, long step, Slot& slot,
              std::vector<std::uint8_t>& raw, class VideoFrameInput& input);

  UnlabeledOptions options_;
  int sequence_ = 0;
  int rows_ = 0;
  std::vector<long> frame_counts_;
  std::vector<int> frame_heights_, frame_widths_;
  std::vector<std::vector<long>> keyframes_;  // per video (keyframe_positions; may be empty)
  std::vector<UnlabeledWindow> windows_;  // every window of every video, in file order
  std::size_t frame_floats_ = 0;
  std::vector<std::unique_ptr<Slot>> slots_;

  std::mutex mutex_;
  std::condition_variable work_cv_, ready_cv_;
  long generation_ = 0;   // bumped by start_epoch: work of an older generation is dropped
  int epoch_ = 0;
  long next_step_ = 0;    // next step a worker takes
  long consumed_ = 0;     // the step next() hands out next
  bool holding_ = false;  // next() handed out a slot that is still in use
  std::exception_ptr error_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace trainer::data
