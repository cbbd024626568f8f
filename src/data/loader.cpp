// Loader workers and the ordered prefetch queue (see loader.hpp).
#include "data/loader.hpp"

#include <opencv2/core.hpp>  // cv::setNumThreads

#include <algorithm>  // std::min, std::copy, std::fill
#include <utility>    // std::swap
#include <cmath>      // std::isnan
#include <new>        // operator new with alignment

#include "data/augment_pixels.hpp"  // PixelAugmenter
#include "data/context.hpp"  // ContextIndex
#include "data/dataset.hpp"  // Dataset
#include "data/visibility.hpp"  // kNoVisibilityFlag
#include "util/error.hpp"    // UserError
#include "util/h5.hpp"       // h5::silence_errors_on_this_thread

namespace trainer::data {

HostAllocator default_host_allocator() {
  return {[](std::size_t bytes) { return ::operator new(bytes, std::align_val_t(64)); },
          [](void* p) { ::operator delete(p, std::align_val_t(64)); }};
}

struct Loader::Scratch {
  std::vector<std::uint8_t> raw;     // one stored frame
  std::vector<std::uint8_t> warped;  // one frame at network size
  PixelAugmenter pixels;             // dlc's image-space steps, buffers reused per frame
};

struct Loader::Slot {
  Batch batch;
  int done = 0;  // rows finished for the batch this slot holds
  void* memory = nullptr;
};

Loader::Loader(const Dataset& dataset, LoaderOptions options) : dataset_(dataset), options_(std::move(options)) {
  if (options_.batch_size < 1) throw UserError("loader: batch size must be at least 1");
  if (options_.height < 1 || options_.width < 1) throw UserError("loader: image size must be positive");
  if (options_.num_workers < 0) options_.num_workers = 0;
  if (options_.prefetch_batches < 1) options_.prefetch_batches = 1;
  if (!options_.allocator.allocate || !options_.allocator.release) options_.allocator = default_host_allocator();
  if (options_.context) context_ = std::make_unique<ContextIndex>(dataset_);
  if (options_.hflip) hflip_partner_ = hflip_partners(dataset_.keypoint_names());
  const int frames = options_.context ? kContextFrames : 1;
  const std::size_t floats =
      static_cast<std::size_t>(options_.batch_size) * frames * 3 * options_.height * options_.width;
  const int k = dataset_.num_keypoints();
  // One slot in use by the consumer plus prefetch_batches being filled.
  for (int i = 0; i < options_.prefetch_batches + 1; ++i) {
    auto slot = std::make_unique<Slot>();
    slot->memory = options_.allocator.allocate(floats * sizeof(float));
    if (!slot->memory) throw SystemError("loader: host allocation of " + std::to_string(floats * 4) + " bytes failed");
    Batch& b = slot->batch;
    b.images = static_cast<float*>(slot->memory);
    b.context_frames = frames;
    b.height = options_.height;
    b.width = options_.width;
    b.num_keypoints = k;
    b.keypoints.resize(static_cast<std::size_t>(options_.batch_size) * k * 2);
    b.missing.resize(static_cast<std::size_t>(options_.batch_size) * k);
    b.visibility.resize(static_cast<std::size_t>(options_.batch_size) * k);
    b.frame_index.resize(options_.batch_size);
    b.is_real.resize(options_.batch_size);
    b.scale_x.resize(options_.batch_size);
    b.scale_y.resize(options_.batch_size);
    slots_.push_back(std::move(slot));
  }
  if (options_.num_workers == 0) {
    own_scratch_ = std::make_unique<Scratch>();
  } else {
    // Workers are the parallelism: OpenCV's own threads inside each warp would only
    // oversubscribe the cores.
    cv::setNumThreads(0);
    for (int i = 0; i < options_.num_workers; ++i) workers_.emplace_back([this] { worker_main(); });
  }
}

Loader::~Loader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
  for (auto& s : slots_) options_.allocator.release(s->memory);
}

namespace {
// Per-row vectors are sized to the batch when handed out and back to capacity when
// released (no reallocation: the capacity never shrinks).
void resize_rows(Batch& b, int rows) {
  b.size = rows;
  const auto n = static_cast<std::size_t>(rows);
  b.keypoints.resize(n * b.num_keypoints * 2);
  b.missing.resize(n * b.num_keypoints);
  b.visibility.resize(n * b.num_keypoints);
  b.frame_index.resize(n);
  b.is_real.resize(n);
  b.scale_x.resize(n);
  b.scale_y.resize(n);
}
}  // namespace

int Loader::batch_rows(std::int64_t b) const {
  const std::int64_t start = b * options_.batch_size;
  return static_cast<int>(std::min<std::int64_t>(options_.batch_size, total_jobs_ - start));
}

void Loader::start_epoch(int epoch, std::vector<SampleRow> rows, int pass) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    ++generation_;
    ready_cv_.wait(lock, [this] { return in_flight_ == 0; });
    epoch_ = epoch;
    seed_ = pass_seed(options_.seed, pass);
    rows_ = std::move(rows);
    const auto n = static_cast<std::int64_t>(rows_.size());
    const std::int64_t bs = options_.batch_size;
    num_batches_ = options_.drop_last ? n / bs : (n + bs - 1) / bs;
    total_jobs_ = options_.drop_last ? num_batches_ * bs : n;
    next_job_ = 0;
    released_ = 0;
    handed_ = 0;
    holding_ = false;
    error_ = nullptr;
    for (auto& s : slots_) {
      s->done = 0;
      resize_rows(s->batch, options_.batch_size);
    }
  }
  work_cv_.notify_all();
}

void Loader::worker_main() {
  h5::silence_errors_on_this_thread();
  Scratch scratch;
  const auto nslots = static_cast<std::int64_t>(slots_.size());
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] {
      return stop_ || (next_job_ < total_jobs_ && next_job_ / options_.batch_size < released_ + nslots);
    });
    if (stop_) return;
    const std::int64_t job = next_job_++;
    const std::uint64_t generation = generation_;
    const std::int64_t b = job / options_.batch_size;
    Slot& slot = *slots_[static_cast<std::size_t>(b % nslots)];
    const SampleRow sample = rows_[static_cast<std::size_t>(job)];
    const int epoch = epoch_;
    const std::uint64_t seed = seed_;
    ++in_flight_;
    lock.unlock();
    std::exception_ptr error;
    try {
      load_row(scratch, slot, static_cast<int>(job % options_.batch_size), sample, epoch, seed);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    --in_flight_;
    if (generation == generation_) {
      if (error && !error_) error_ = error;
      ++slot.done;
    }
    ready_cv_.notify_all();
  }
}

const Batch* Loader::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto nslots = static_cast<std::int64_t>(slots_.size());
  if (holding_) {
    // The consumer is done with the previous batch: its slot may be refilled.
    Slot& previous = *slots_[static_cast<std::size_t>((handed_ - 1) % nslots)];
    resize_rows(previous.batch, options_.batch_size);
    released_ = handed_;
    holding_ = false;
    lock.unlock();
    work_cv_.notify_all();
    lock.lock();
  }
  if (error_) std::rethrow_exception(error_);
  if (handed_ >= num_batches_) return nullptr;
  const std::int64_t b = handed_;
  Slot& slot = *slots_[static_cast<std::size_t>(b % nslots)];
  const int rows = batch_rows(b);
  if (workers_.empty()) {
    const int epoch = epoch_;
    const std::uint64_t seed = seed_;
    lock.unlock();
    for (int r = 0; r < rows; ++r)
      load_row(*own_scratch_, slot, r, rows_[static_cast<std::size_t>(b * options_.batch_size + r)], epoch, seed);
    lock.lock();
  } else {
    ready_cv_.wait(lock, [&] { return slot.done == rows || error_; });
    if (error_) std::rethrow_exception(error_);
  }
  slot.done = 0;
  ++handed_;
  holding_ = true;
  Batch& batch = slot.batch;
  resize_rows(batch, rows);
  batch.epoch = epoch_;
  batch.index = b;
  return &batch;
}

void Loader::load_row(Scratch& scratch, Slot& slot, int row, const SampleRow& sample, int epoch,
                      std::uint64_t seed) {
  const int h = dataset_.height(), w = dataset_.width(), c = dataset_.channels();
  const int oh = options_.height, ow = options_.width;
  const int k = dataset_.num_keypoints();
  Batch& batch = slot.batch;
  const FrameTransform t =
      make_transform(h, w, oh, ow, options_.augmentation, seed, epoch, sample.frame, options_.hflip);
  scratch.raw.resize(dataset_.frame_bytes());
  scratch.warped.resize(static_cast<std::size_t>(oh) * ow * c);
  const std::size_t frame_floats = static_cast<std::size_t>(3) * oh * ow;
  float* row_images = batch.images + static_cast<std::size_t>(row) * batch.context_frames * frame_floats;
  // Built once per row: every context frame gets the same masks and elastic field.
  PixelAugmenter* pixels = t.pixels.any() ? &scratch.pixels : nullptr;
  if (pixels) pixels->prepare(t.pixels, oh, ow, c);
  auto load_frame = [&](std::int64_t frame, float* out) {
    if (frame >= 0) dataset_.read_image(frame, scratch.raw.data());
    else dataset_.read_context_image(-1 - frame, scratch.raw.data());  // a neighbour that is only context
    warp_image(t, scratch.raw.data(), h, w, c, scratch.warped.data(), oh, ow);
    if (pixels) pixels->apply(scratch.warped.data());
    normalize_to_planes(t, scratch.warped.data(), oh, ow, c, out);
  };
  if (context_) {
    const auto frames = context_->around(sample.frame);
    for (int j = 0; j < kContextFrames; ++j) load_frame(frames[static_cast<std::size_t>(j)], row_images + j * frame_floats);
  } else {
    load_frame(sample.frame, row_images);
  }
  float* keypoints = batch.keypoints.data() + static_cast<std::size_t>(row) * k * 2;
  const float* labels = dataset_.keypoints(sample.frame);
  transform_keypoints(t, labels, keypoints, k, oh, ow);
  std::uint8_t* missing = batch.missing.data() + static_cast<std::size_t>(row) * k;
  for (int j = 0; j < k; ++j) missing[j] = (std::isnan(labels[2 * j]) || std::isnan(labels[2 * j + 1])) ? 1 : 0;
  std::uint8_t* flags = batch.visibility.data() + static_cast<std::size_t>(row) * k;
  if (const std::uint8_t* stored = dataset_.visibility(sample.frame))
    std::copy(stored, stored + k, flags);
  else
    std::fill(flags, flags + k, kNoVisibilityFlag);
  if (t.flipped) {  // the mirror image of a left paw is a right paw: swap the pairs
    for (int j = 0; j < k; ++j) {
      const int p = hflip_partner_[static_cast<std::size_t>(j)];
      if (p <= j) continue;
      std::swap(keypoints[2 * j], keypoints[2 * p]);
      std::swap(keypoints[2 * j + 1], keypoints[2 * p + 1]);
      std::swap(missing[j], missing[p]);
      std::swap(flags[j], flags[p]);  // lightning-pose swaps the flags with the keypoints
    }
  }
  if (pixels) pixels->move_keypoints(keypoints, k);  // only the elastic step moves them
  batch.frame_index[static_cast<std::size_t>(row)] = sample.frame;
  batch.is_real[static_cast<std::size_t>(row)] = sample.is_real ? 1 : 0;
  batch.scale_x[static_cast<std::size_t>(row)] = static_cast<float>(w) / ow;
  batch.scale_y[static_cast<std::size_t>(row)] = static_cast<float>(h) / oh;
}

}  // namespace trainer::data
