// Unlabelled video frames for the unsupervised losses (see unlabeled_frames.hpp).
#include "data/unlabeled_frames.hpp"

#include <opencv2/core.hpp>  // cv::setNumThreads

#include <algorithm>  // std::min, std::max, std::clamp, std::upper_bound
#include <cmath>      // NAN
#include <memory>     // std::unique_ptr
#include <numeric>    // std::iota

#include "data/context.hpp"       // kContextFrames, kHalfContext
#include "data/rng.hpp"           // KeyedRng, RngPurpose
#include "data/unlabeled_augment.hpp"  // draw_unlabeled_augment
#include "data/video_frame_input.hpp"  // VideoFrameInput
#include "data/video_reader.hpp"  // VideoReader
#include "util/error.hpp"         // UserError, SystemError

namespace trainer::data {

struct UnlabeledFrames::Slot {
  Batch batch;
  float* memory = nullptr;
  long step = -1;      // the step whose frames the slot holds, once ready
  long generation = -1;
  bool ready = false;
  bool busy = false;   // a worker decodes into it (maybe for a generation start_epoch dropped)
};

namespace {
// Host memory for decoded steps ahead of the training loop, at most: a worker
// decodes a whole run of consecutive windows, so the slots hold up to one run per
// worker (fewer when the frames are large: the workers then wait for the loop).
constexpr std::size_t kSlotBudgetBytes = std::size_t(256) << 20;

// The group of pictures `frame` is in: the number of keyframes at or before it.
long gop_of(const std::vector<long>& keyframes, long frame) {
  return static_cast<long>(std::upper_bound(keyframes.begin(), keyframes.end(), frame) - keyframes.begin());
}
}  // namespace

UnlabeledFrames::UnlabeledFrames(UnlabeledOptions options) : options_(std::move(options)) {
  if (options_.frames_per_rank < 1) throw UserError("unlabelled frames: frames per rank must be at least 1");
  if (options_.world_size < 1 || options_.rank < 0 || options_.rank >= options_.world_size)
    throw SystemError("unlabelled frames: rank " + std::to_string(options_.rank) + " of " +
                      std::to_string(options_.world_size));
  if (options_.videos.empty())
    throw UserError("the unsupervised losses need unlabelled videos, and none was given",
                    "set data.video_dir to a folder of videos (lightning-pose's key)");
  if (options_.num_workers < 1) options_.num_workers = 1;
  if (options_.channels != 1 && options_.channels != 3)
    throw SystemError("unlabelled frames: channels must be 1 or 3, not " + std::to_string(options_.channels));
  if (!options_.allocator.allocate || !options_.allocator.release) options_.allocator = default_host_allocator();
  if (options_.context && options_.frames_per_rank < kContextFrames)
    throw UserError("unlabelled context batches need at least " + std::to_string(kContextFrames) +
                    " frames per rank, not " + std::to_string(options_.frames_per_rank));
  rows_ = options_.context ? options_.frames_per_rank - 2 * kHalfContext : options_.frames_per_rank;
  sequence_ = rows_ * options_.world_size + (options_.context ? 2 * kHalfContext : 0);
  for (std::size_t v = 0; v < options_.videos.size(); ++v) {
    VideoReader probe(options_.videos[v]);  // errors for missing / undecodable files, before any thread
    const long frames = probe.info().frame_count;
    if (frames < sequence_)
      throw UserError("video " + options_.videos[v] + " has " + std::to_string(frames) +
                          " frames, fewer than one unlabelled sequence of " + std::to_string(sequence_) +
                          " frames (" + std::to_string(rows_) + (options_.context ? " context rows" : "") +
                          " per rank x " + std::to_string(options_.world_size) + " ranks" +
                          (options_.context ? " + 4 context frames" : "") + ")",
                      options_.context
                          ? "lower dali.context.train.batch_size, or leave the video out of data.video_dir"
                          : "lower dali.base.train.sequence_length, or leave the video out of data.video_dir");
    frame_counts_.push_back(frames);
    frame_heights_.push_back(probe.info().height);
    frame_widths_.push_back(probe.info().width);
    keyframes_.push_back(keyframe_positions(options_.videos[v]));
    for (long first = 0; first + sequence_ <= frames; first += sequence_)
      windows_.push_back({static_cast<int>(v), first});
    // The count comes from the container and can be an estimate (duration x rate):
    // the last frame a window uses must decode now, not on one rank mid-training.
    std::vector<std::uint8_t> last;
    probe.read((frames / sequence_) * sequence_ - 1, options_.channels, last);
  }
  frame_floats_ = static_cast<std::size_t>(3) * options_.height * options_.width;
  // F frames a slot: without context one a row, with context the rows' sequence (rows + 4).
  const std::size_t slot_bytes = frame_floats_ * static_cast<std::size_t>(options_.frames_per_rank) * sizeof(float);
  const int num_slots = static_cast<int>(std::clamp<std::size_t>(
      kSlotBudgetBytes / slot_bytes, 2, std::size_t(options_.num_workers) * kWindowsPerRun));
  try {
    for (int i = 0; i < num_slots; ++i) {
      slots_.push_back(std::make_unique<Slot>());
      slots_.back()->memory = static_cast<float*>(options_.allocator.allocate(slot_bytes));
      if (!slots_.back()->memory)
        throw SystemError("unlabelled frames: host allocation of " + std::to_string(slot_bytes) + " bytes failed");
    }
    cv::setNumThreads(0);  // the workers are the parallelism
    for (int i = 0; i < options_.num_workers; ++i) workers_.emplace_back([this] { worker_main(); });
  } catch (...) {
    shut_down();  // no destructor runs for a constructor that throws
    throw;
  }
}

UnlabeledFrames::~UnlabeledFrames() { shut_down(); }

void UnlabeledFrames::shut_down() noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_)
    if (t.joinable()) t.join();
  workers_.clear();
  for (auto& s : slots_)
    if (s->memory) options_.allocator.release(s->memory);
  slots_.clear();
}

std::vector<long> UnlabeledFrames::epoch_order(int epoch, std::vector<long>* run_ends) const {
  // Runs of consecutive windows of one video (those starting in one group of
  // pictures, at most kMaxRunFrames frames; kWindowsPerRun windows when the keyframes
  // are unknown), shuffled by a Fisher-Yates shuffle keyed by (seed, epoch): the same
  // on every rank and for any number of workers. Within a run the frames follow each
  // other, so a worker decodes a run with one seek (a random window each step would
  // seek each step, and a seek decodes from the keyframe before: most of the time for
  // long-GOP video). Starting runs at keyframes keeps what a seek decodes in vain
  // below one window (plus the ranks before this one's share).
  std::vector<std::pair<long, long>> runs;  // [first window, end window)
  for (std::size_t i = 0; i < windows_.size();) {
    const UnlabeledWindow& start = windows_[i];
    const std::vector<long>& keyframes = keyframes_[static_cast<std::size_t>(start.video)];
    const auto same_run = [&](const UnlabeledWindow& w, std::size_t count) {
      if (w.video != start.video) return false;
      if (keyframes.empty()) return count < kWindowsPerRun;
      return w.first + sequence_ - start.first <= std::max<long>(kMaxRunFrames, sequence_) &&
             gop_of(keyframes, w.first) == gop_of(keyframes, start.first);
    };
    std::size_t j = i + 1;
    while (j < windows_.size() && same_run(windows_[j], j - i)) ++j;
    runs.push_back({static_cast<long>(i), static_cast<long>(j)});
    i = j;
  }
  KeyedRng rng(options_.seed, static_cast<std::uint64_t>(RngPurpose::kUnlabeled), static_cast<std::uint64_t>(epoch));
  for (std::size_t i = runs.size(); i-- > 1;) std::swap(runs[i], runs[rng.below(i + 1)]);
  std::vector<long> order;
  if (run_ends) run_ends->clear();
  for (const auto& run : runs) {
    for (long w = run.first; w < run.second; ++w) {
      order.push_back(w);
      if (run_ends) run_ends->push_back(static_cast<long>(order.size()) + (run.second - w - 1));
    }
  }
  return order;
}

UnlabeledWindow UnlabeledFrames::window(int epoch, long step) const {
  const std::vector<long> order = epoch_order(epoch, nullptr);
  const auto n = static_cast<long>(order.size());
  return windows_[static_cast<std::size_t>(order[static_cast<std::size_t>(step % n)])];  // wraps around
}

void UnlabeledFrames::start_epoch(int epoch, long first_step) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++generation_;
    epoch_ = epoch;
    next_step_ = first_step;
    consumed_ = first_step;
    holding_ = false;
    for (auto& s : slots_) s->ready = false;
  }
  work_cv_.notify_all();
}

void UnlabeledFrames::worker_main() {
  // One decoder at a time: a run stays in one video, and a decoder per video per
  // worker would hold V x W FFmpeg contexts (threads, buffers) on every rank.
  std::unique_ptr<VideoReader> reader;
  int reader_video = -1;
  std::vector<std::uint8_t> raw;
  VideoFrameInput input;
  std::vector<long> order, run_ends;
  int order_epoch = -1;
  const long num_slots = static_cast<long>(slots_.size());
  const long n = static_cast<long>(windows_.size());
  for (;;) {
    // Claim the rest of the run the next step belongs to (consecutive frames).
    long first = 0, end = 0, generation = 0;
    int epoch = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_cv_.wait(lock, [&] { return stop_ || error_ || next_step_ < consumed_ + num_slots; });
      if (stop_ || error_) return;
      generation = generation_;
      epoch = epoch_;
      if (epoch != order_epoch) {
        lock.unlock();
        try {
          order = epoch_order(epoch, &run_ends);
        } catch (...) {  // out of memory: the consumer rethrows it
          std::lock_guard<std::mutex> relock(mutex_);
          if (!error_) error_ = std::current_exception();
          ready_cv_.notify_all();
          work_cv_.notify_all();
          return;
        }
        order_epoch = epoch;
        continue;  // re-check: start_epoch() may have come meanwhile
      }
      first = next_step_;
      end = (first / n) * n + run_ends[static_cast<std::size_t>(first % n)];
      next_step_ = end;
    }
    for (long step = first; step < end; ++step) {
      Slot& slot = *slots_[static_cast<std::size_t>(step % num_slots)];
      {
        // The slot frees once the loop is past the step that used it; a stale worker
        // (start_epoch() came) may still be writing into it.
        std::unique_lock<std::mutex> lock(mutex_);
        work_cv_.wait(lock, [&] {
          return stop_ || error_ || generation != generation_ || (step < consumed_ + num_slots && !slot.busy);
        });
        if (stop_ || error_) return;
        if (generation != generation_) break;  // dropped: claim anew
        slot.busy = true;
      }
      try {
        const UnlabeledWindow w = windows_[static_cast<std::size_t>(order[static_cast<std::size_t>(step % n)])];
        if (w.video != reader_video) {
          reader.reset();
          reader = std::make_unique<VideoReader>(options_.videos[static_cast<std::size_t>(w.video)]);
          reader_video = w.video;
        }
        decode(*reader, w, epoch, step, slot, raw, input);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        slot.busy = false;
        if (!error_) error_ = std::current_exception();
        ready_cv_.notify_all();
        work_cv_.notify_all();
        return;
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        slot.busy = false;
        if (generation == generation_) {  // else start_epoch() happened meanwhile: dropped
          slot.step = step;
          slot.generation = generation;
          slot.ready = true;
        }
      }
      ready_cv_.notify_all();
      work_cv_.notify_all();
    }
  }
}

void UnlabeledFrames::decode(VideoReader& reader, const UnlabeledWindow& w, int epoch, long step, Slot& slot,
                             std::vector<std::uint8_t>& raw, VideoFrameInput& input) {
  const auto v = static_cast<std::size_t>(w.video);
  const long first = w.first + static_cast<long>(options_.rank) * rows_;
  const int frame_h = frame_heights_[v], frame_w = frame_widths_[v];
  // The frames go straight into the slot: with context as one sequence of the rank's
  // F frames, row i being frames i .. i + 4 (Batch::sliding_context).
  float* decoded = slot.memory;
  const bool augment = augments_unlabeled_frames(options_.imgaug);
  UnlabeledAugment a;
  if (augment) a = draw_unlabeled_augment(options_.height, options_.width, options_.seed, epoch, step);
  for (int i = 0; i < options_.frames_per_rank; ++i) {
    reader.read(first + i, options_.channels, raw);
    float* out = decoded + static_cast<std::size_t>(i) * frame_floats_;
    if (!augment) {
      input.plain(raw.data(), frame_h, frame_w, options_.channels, options_.height, options_.width, out);
      continue;
    }
    // Noise keyed by the frame's place in the whole sequence, so ranks split it alike.
    input.augmented(raw.data(), frame_h, frame_w, options_.channels, options_.height, options_.width, a, options_.seed,
                    epoch, step, static_cast<long>(options_.rank) * rows_ + i, out);
  }
  Batch& b = slot.batch;
  const auto n = static_cast<std::size_t>(rows_);
  b.size = rows_;
  b.context_frames = options_.context ? kContextFrames : 1;
  b.sliding_context = options_.context;
  b.height = options_.height;
  b.width = options_.width;
  b.num_keypoints = options_.num_keypoints;
  b.images = slot.memory;
  b.keypoints.assign(n * static_cast<std::size_t>(options_.num_keypoints) * 2, NAN);
  b.missing.assign(n * static_cast<std::size_t>(options_.num_keypoints), 1);
  b.frame_index.resize(n);
  const long centre = options_.context ? kHalfContext : 0;
  for (std::size_t i = 0; i < n; ++i) b.frame_index[i] = first + centre + static_cast<long>(i);
  b.is_real.assign(n, 1);
  b.scale_x.assign(n, static_cast<float>(frame_w) / options_.width);
  b.scale_y.assign(n, static_cast<float>(frame_h) / options_.height);
  if (augment) b.keypoint_unwarp.assign(a.unwarp, a.unwarp + 6);
  else b.keypoint_unwarp.clear();
}

const Batch& UnlabeledFrames::next() {
  const long num_slots = static_cast<long>(slots_.size());
  std::unique_lock<std::mutex> lock(mutex_);
  if (holding_) {
    slots_[static_cast<std::size_t>(consumed_ % num_slots)]->ready = false;
    ++consumed_;
    holding_ = false;
    work_cv_.notify_all();
  }
  Slot& slot = *slots_[static_cast<std::size_t>(consumed_ % num_slots)];
  ready_cv_.wait(lock, [&] {
    return error_ || (slot.ready && slot.step == consumed_ && slot.generation == generation_);
  });
  if (error_) std::rethrow_exception(error_);
  slot.batch.epoch = epoch_;
  slot.batch.index = consumed_;
  holding_ = true;
  return slot.batch;
}

}  // namespace trainer::data
