// Worker-decoded batches of video frames (see video_batches.hpp).
#include "data/video_batches.hpp"

#include <opencv2/core.hpp>  // cv::setNumThreads

#include <algorithm>  // std::min, std::max, std::clamp
#include <cmath>      // NAN
#include <cstring>    // std::memcpy

#include "data/context.hpp"       // kContextFrames, kHalfContext
#include "data/video_frame_input.hpp"  // VideoFrameInput
#include "data/video_reader.hpp"       // VideoReader, keyframe_positions
#include "data/video_runs.hpp"         // video_runs
#include "util/error.hpp"         // UserError, SystemError

namespace trainer::data {

struct VideoBatches::Slot {
  void* memory = nullptr;  // decoded frames [first, first + count) as [3, H, W] planes each
  long chunk = -1;
  long first = 0;          // video frame number of the first stored frame
  bool ready = false;
};

VideoBatches::VideoBatches(const std::string& path, long begin, long end, VideoBatchOptions options)
    : path_(path), options_(std::move(options)) {
  if (options_.batch_size < 1) throw UserError("video batches: batch size must be at least 1");
  if (options_.height < 1 || options_.width < 1) throw UserError("video batches: image size must be positive");
  if (options_.num_workers < 1) options_.num_workers = 1;
  if (!options_.allocator.allocate || !options_.allocator.release) options_.allocator = default_host_allocator();
  {
    const VideoReader probe(path);  // errors for missing / empty / undecodable files, before any thread
    video_frames_ = options_.frame_count > 0 ? options_.frame_count : probe.info().frame_count;
    fps_ = probe.info().fps;
    frame_h_ = probe.info().height;
    frame_w_ = probe.info().width;
  }
  begin_ = std::max(0L, begin);
  end_ = end < 0 ? video_frames_ : std::min(end, video_frames_);
  if (begin_ > end_) begin_ = end_;
  const long bs = options_.batch_size;
  chunk_frames_ = bs * std::max(1L, (64 + bs - 1) / bs);  // whole batches, at least 64 frames per seek
  num_chunks_ = (end_ - begin_ + chunk_frames_ - 1) / chunk_frames_;
  frame_floats_ = static_cast<std::size_t>(3) * options_.height * options_.width;
  const long stored = chunk_frames_ + (options_.context ? 2 * kHalfContext : 0);
  // Only a packet scan up to the last frame this object decodes (a rank's share of a
  // long video need not read the rest), plus B-frames' reordering.
  run_starts_ = video_runs(keyframe_positions(path, end_ + kHalfContext + 16), begin_, chunk_frames_, num_chunks_,
                           options_.context ? kHalfContext : 0);
  const long runs = static_cast<long>(run_starts_.size()) - 1;
  const int workers = static_cast<int>(std::min<long>(options_.num_workers, std::max(1L, runs)));
  // A worker decodes a chunk only when its slot is free, and slots free in frame
  // order: for W workers to decode W runs at once, the slots must span W runs. Capped
  // by kSlotBytes of frames in all (at 256x256, 21 slots of 64 frames).
  const std::size_t slot_bytes = static_cast<std::size_t>(stored) * frame_floats_ * sizeof(float);
  const long run_chunks = runs > 0 ? (num_chunks_ + runs - 1) / runs : 1;
  const long affordable = static_cast<long>(kSlotBytes / std::max<std::size_t>(slot_bytes, 1));
  const long num_slots = std::max<long>(workers + 1, std::min<long>(workers * run_chunks + 1, affordable));
  // The first workers + 1 slots are needed; the rest only let more workers decode at
  // once, so a refused allocation there stops adding slots instead of the run.
  const long needed = std::min<long>(workers + 1, std::max(1L, num_chunks_));
  const long wanted = std::min<long>(num_slots, std::max(1L, num_chunks_));
  auto allocate = [&](std::size_t bytes, bool required) -> void* {
    void* p = nullptr;
    try {
      p = options_.allocator.allocate(bytes);
    } catch (...) {
      if (required) throw;
    }
    if (!p && required)
      throw SystemError("video batches: host allocation of " + std::to_string(bytes) + " bytes failed");
    return p;
  };
  try {
    for (long i = 0; i < wanted; ++i) {
      void* p = allocate(slot_bytes, i < needed);
      if (!p) break;
      slots_.push_back(std::make_unique<Slot>());
      slots_.back()->memory = p;
    }
    if (options_.context)
      context_memory_ = allocate(static_cast<std::size_t>(bs + 2 * kHalfContext) * frame_floats_ * sizeof(float), true);
  } catch (...) {
    release_memory();  // no destructor runs for a constructor that throws
    throw;
  }
  batch_.context_frames = options_.context ? kContextFrames : 1;
  batch_.sliding_context = options_.context;  // rows + 4 frames, each through the backbone once
  batch_.height = options_.height;
  batch_.width = options_.width;
  batch_.num_keypoints = options_.num_keypoints;
  // Decoding threads are the parallelism: OpenCV's own threads inside each resize
  // would only oversubscribe the cores.
  cv::setNumThreads(0);
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { worker_main(); });
}

VideoBatches::~VideoBatches() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
  release_memory();
}

void VideoBatches::release_memory() noexcept {
  for (auto& s : slots_) options_.allocator.release(s->memory);
  slots_.clear();
  if (context_memory_) options_.allocator.release(context_memory_);
  context_memory_ = nullptr;
}

void VideoBatches::worker_main() {
  std::unique_ptr<VideoReader> reader;  // opened on the first run, kept
  std::vector<std::uint8_t> raw;
  VideoFrameInput input;
  Carry carry;
  const long num_slots = static_cast<long>(slots_.size());
  for (;;) {
    long first_chunk = 0, end_chunk = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (stop_ || error_ || next_run_ + 1 >= static_cast<long>(run_starts_.size())) break;
      first_chunk = run_starts_[static_cast<std::size_t>(next_run_)];
      end_chunk = run_starts_[static_cast<std::size_t>(next_run_ + 1)];
      ++next_run_;
    }
    // A run's chunks are consecutive video: one seek at its start, then decoding on.
    for (long chunk = first_chunk; chunk < end_chunk; ++chunk) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        work_cv_.wait(lock, [&] { return stop_ || error_ || chunk < released_ + num_slots; });
        if (stop_ || error_) return;
      }
      Slot& slot = *slots_[static_cast<std::size_t>(chunk % num_slots)];
      try {
        if (!reader) {
          reader = std::make_unique<VideoReader>(path_);
          reader->trust_frame_count(video_frames_);
        }
        const long seeks = reader->seeks();
        decode_chunk(*reader, slot, chunk, raw, input, carry);
        std::lock_guard<std::mutex> lock(mutex_);
        seeks_ += reader->seeks() - seeks;
        slot.chunk = chunk;
        slot.ready = true;
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::current_exception();
        ready_cv_.notify_all();
        work_cv_.notify_all();
        return;
      }
      ready_cv_.notify_all();
    }
  }
}

void VideoBatches::decode_chunk(VideoReader& reader, Slot& slot, long chunk, std::vector<std::uint8_t>& raw,
                                VideoFrameInput& input, Carry& carry) {
  const long s = begin_ + chunk * chunk_frames_;
  const long e = std::min(end_, s + chunk_frames_);
  const long first = options_.context ? std::max(0L, s - kHalfContext) : s;
  const long last = options_.context ? std::min(video_frames_, e + kHalfContext) : e;
  slot.first = first;
  float* out = static_cast<float*>(slot.memory);
  for (long f = first; f < last; ++f) {
    float* frame = out + static_cast<std::size_t>(f - first) * frame_floats_;
    // A context chunk begins with the 4 frames its run's previous chunk ended on:
    // copied, since decoding them again would need a seek back.
    if (f >= carry.first && f < carry.first + carry.count) {
      std::memcpy(frame, carry.frames.data() + static_cast<std::size_t>(f - carry.first) * frame_floats_,
                  frame_floats_ * sizeof(float));
      continue;
    }
    reader.read(f, options_.channels, raw);
    input.plain(raw.data(), frame_h_, frame_w_, options_.channels, options_.height, options_.width, frame);
  }
  if (options_.context) {
    carry.count = std::min<long>(2 * kHalfContext, last - first);
    carry.first = last - carry.count;
    carry.frames.assign(out + static_cast<std::size_t>(carry.first - first) * frame_floats_,
                        out + static_cast<std::size_t>(last - first) * frame_floats_);
  }
}

long VideoBatches::seeks() {
  std::lock_guard<std::mutex> lock(mutex_);
  return seeks_;
}

const Batch* VideoBatches::next() {
  const long num_slots = static_cast<long>(slots_.size());
  auto chunk_rows = [&](long c) { return std::min(end_, begin_ + (c + 1) * chunk_frames_) - (begin_ + c * chunk_frames_); };
  std::unique_lock<std::mutex> lock(mutex_);
  if (holding_ && current_row_ >= chunk_rows(current_chunk_)) {
    Slot& done = *slots_[static_cast<std::size_t>(current_chunk_ % num_slots)];
    done.ready = false;
    ++released_;
    ++current_chunk_;
    current_row_ = 0;
    holding_ = false;
    work_cv_.notify_all();
  }
  if (current_chunk_ >= num_chunks_) return nullptr;
  Slot& slot = *slots_[static_cast<std::size_t>(current_chunk_ % num_slots)];
  ready_cv_.wait(lock, [&] { return error_ || (slot.ready && slot.chunk == current_chunk_); });
  if (error_) std::rethrow_exception(error_);
  lock.unlock();

  const long t0 = begin_ + current_chunk_ * chunk_frames_ + current_row_;
  const int rows = static_cast<int>(std::min<long>(options_.batch_size, chunk_rows(current_chunk_) - current_row_));
  const float* stored = static_cast<const float*>(slot.memory);
  if (!options_.context) {
    batch_.images = const_cast<float*>(stored) + static_cast<std::size_t>(t0 - slot.first) * frame_floats_;
  } else {
    // One sequence, frames t0 - 2 .. t0 + rows + 1 clamped to the video: row r is its
    // frames r .. r + 4 (Batch::sliding_context).
    float* dst = static_cast<float*>(context_memory_);
    for (int j = 0; j < rows + 2 * kHalfContext; ++j) {
      const long f = std::clamp(t0 - kHalfContext + j, 0L, video_frames_ - 1);
      std::memcpy(dst + static_cast<std::size_t>(j) * frame_floats_,
                  stored + static_cast<std::size_t>(f - slot.first) * frame_floats_, frame_floats_ * sizeof(float));
    }
    batch_.images = dst;
  }
  const auto n = static_cast<std::size_t>(rows);
  batch_.size = rows;
  batch_.index = current_chunk_ * (chunk_frames_ / options_.batch_size) + current_row_ / options_.batch_size;
  batch_.keypoints.assign(n * options_.num_keypoints * 2, NAN);
  batch_.missing.assign(n * options_.num_keypoints, 1);
  batch_.frame_index.resize(n);
  for (int r = 0; r < rows; ++r) batch_.frame_index[static_cast<std::size_t>(r)] = t0 + r;
  batch_.is_real.assign(n, 1);
  batch_.scale_x.assign(n, static_cast<float>(frame_w_) / options_.width);
  batch_.scale_y.assign(n, static_cast<float>(frame_h_) / options_.height);
  current_row_ += rows;
  holding_ = true;
  return &batch_;
}

}  // namespace trainer::data
