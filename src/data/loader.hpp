#pragma once
// The loader: worker threads that read frames, resize, augment and normalize them
// into batches, in order, through a bounded prefetch queue.
//
// Determinism: every row's result depends only on (seed, epoch, frame index), and
// rows land in fixed places, so the batches are identical for any worker count
// (0 workers = load in the calling thread). Workers read raw frames under HDF5's
// lock and do everything else outside it.
//
// Use:
//   Loader loader(dataset, options);           // dataset must outlive the loader
//   for (int epoch = 0; ...; ++epoch) {
//     loader.start_epoch(epoch, distributed_rows(split.train, sampler_options, epoch));
//     while (const Batch* b = loader.next()) { ... }   // b valid until the next call
//   }
#include <condition_variable>  // std::condition_variable
#include <cstdint>             // std::int64_t, std::uint64_t
#include <exception>           // std::exception_ptr
#include <functional>          // std::function
#include <memory>              // std::unique_ptr
#include <mutex>               // std::mutex
#include <thread>              // std::thread
#include <vector>              // std::vector

#include "data/augment.hpp"  // Augmentation
#include "data/batch.hpp"    // Batch
#include "data/sampler.hpp"  // SampleRow

namespace trainer::data {

class Dataset;
class ContextIndex;

// Host memory for batch images. The trainer passes pinned memory on CUDA
// (cudaHostAlloc / cudaFreeHost); the default is 64-byte aligned operator new.
struct HostAllocator {
  std::function<void*(std::size_t bytes)> allocate;
  std::function<void(void* pointer)> release;
};
HostAllocator default_host_allocator();

struct LoaderOptions {
  int batch_size = 1;            // rows per batch on this rank
  int height = 256;              // network input (image_resize_dims)
  int width = 256;
  Augmentation augmentation = Augmentation::kNone;  // kDlc for training only
  std::uint64_t seed = 0;        // augmentation seed (rng_seed_data_pt)
  int num_workers = 0;           // 0: load in the calling thread
  int prefetch_batches = 2;      // batches prepared ahead of the one being used
  bool context = false;          // 5 frames per row (heatmap_mhcrnn)
  bool drop_last = false;        // drop the final partial batch of an epoch
  bool hflip = false;            // lightning-pose's imgaug_hflip (training only): mirror half the rows
  HostAllocator allocator;       // empty: default_host_allocator()
};

class Loader {
 public:
  Loader(const Dataset& dataset, LoaderOptions options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Begins an epoch over `rows` in order (from distributed_rows). Abandons any
  // batches of the previous epoch still in flight. `pass` > 0: a further pass over the
  // frames within the epoch, augmented with pass_seed(seed, pass) (sampler.hpp).
  void start_epoch(int epoch, std::vector<SampleRow> rows, int pass = 0);
  // The next batch, or nullptr when the epoch is done. Rethrows a worker's error
  // (e.g. a UserError for a damaged frame).
  const Batch* next();
  std::int64_t num_batches() const { return num_batches_; }
  const LoaderOptions& options() const { return options_; }

  // Fills one row: exposed for tests and the benchmark (thread-safe).
  struct Scratch;

 private:
  struct Slot;
  void worker_main();
  void load_row(Scratch& scratch, Slot& slot, int row, const SampleRow& sample, int epoch, std::uint64_t seed);
  int batch_rows(std::int64_t b) const;

  const Dataset& dataset_;
  LoaderOptions options_;
  std::unique_ptr<ContextIndex> context_;
  std::vector<int> hflip_partner_;  // with hflip: where each keypoint goes on a flip
  std::vector<std::unique_ptr<Slot>> slots_;
  std::unique_ptr<Scratch> own_scratch_;  // for num_workers = 0

  std::mutex mutex_;
  std::condition_variable work_cv_;   // workers wait for jobs
  std::condition_variable ready_cv_;  // consumer waits for rows; start_epoch for idle workers
  std::uint64_t generation_ = 0;
  int epoch_ = 0;
  std::uint64_t seed_ = 0;  // the augmentation seed of this pass (pass_seed)
  std::vector<SampleRow> rows_;
  std::int64_t num_batches_ = 0;
  std::int64_t total_jobs_ = 0;
  std::int64_t next_job_ = 0;
  std::int64_t released_ = 0;  // batches before this one have free slots
  std::int64_t handed_ = 0;    // next batch to hand out
  bool holding_ = false;
  int in_flight_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace trainer::data
