#pragma once
// Gradient averaging over ranks in buckets, after PyTorch DDP's reducer.
//
// The flat gradient buffer is cut into buckets, from its end: backward produces
// the last layers' gradients first, so the first bucket covers the end of the
// buffer. The first bucket is small (first_bucket_mb, default 1 MiB) so
// communication starts early; the others hold up to bucket_cap_mb (default
// 25 MiB). Buckets are views into the gradients themselves (no copies).
//
// Backward announces each parameter's gradient with on_ready(), offsets strictly
// decreasing. Once every gradient of a bucket is final (the lowest offset
// announced so far is at or below the bucket's start), its asynchronous
// all-reduce (average) starts at once, while backward goes on. The plan depends
// only on the range begin() names, which is the same on every rank, so the
// buckets start in the same order everywhere (a different order would hang or
// mix up buffers). finish() starts whatever is left and waits for all; the
// optimizer runs after it.
//
// manual_gradient_reduction (VISSL): no buckets; finish() averages the whole
// range in one all-reduce after backward (for debugging, or to save memory).
#include <cstddef>  // std::size_t
#include <memory>   // std::unique_ptr
#include <string>   // std::string
#include <vector>   // std::vector

#include "comm/communicator.hpp"    // comm::Communicator, comm::Work
#include "train/gradient_sync.hpp"  // GradientSync

namespace trainer::train {

struct BucketConfig {
  double bucket_cap_mb = 25.0;    // MiB per bucket
  double first_bucket_mb = 1.0;   // MiB of the first bucket (the last layers)
  bool manual = false;            // manual_gradient_reduction
};

struct Bucket {
  std::size_t offset = 0;  // into the flat gradient buffer
  std::size_t count = 0;
};

// Buckets for gradients [offset, offset + count), in launch order (from the end).
std::vector<Bucket> plan_buckets(std::size_t offset, std::size_t count, const BucketConfig& config);

// Accumulated over steps, for the overlap report.
struct ReductionStats {
  long steps = 0;
  long buckets = 0;            // all-reduces started
  double comm_seconds = 0;     // time the all-reduces ran (-1 if the backend cannot tell)
  double exposed_seconds = 0;  // time finish() waited: communication not hidden behind backward
  // Fraction of all-reduce time hidden behind backward, or -1 when unknown.
  double hidden_fraction() const {
    return comm_seconds > 0 ? 1.0 - (exposed_seconds < comm_seconds ? exposed_seconds / comm_seconds : 1.0)
                            : -1.0;
  }
};

class BucketReducer final : public GradientSync {
 public:
  // `gradients` is the flat gradient buffer (device memory for NCCL).
  BucketReducer(comm::Communicator& comm, float* gradients, BucketConfig config);
  ~BucketReducer() override;

  void begin(std::size_t offset, std::size_t count, compute::Stream& stream) override;
  void on_ready(std::size_t offset, std::size_t count, compute::Stream& stream) override;
  void finish(compute::Stream& stream) override;

  const std::vector<Bucket>& buckets() const { return buckets_; }
  const ReductionStats& stats() const { return stats_; }

 private:
  void launch_ready(compute::Stream& stream);

  comm::Communicator& comm_;
  float* gradients_;
  BucketConfig config_;
  std::size_t range_offset_ = 0, range_count_ = 0;
  std::vector<Bucket> buckets_;
  std::vector<std::string> names_;  // "gradient bucket i", alive while a collective may read it
  std::vector<std::unique_ptr<comm::Work>> in_flight_;
  compute::Stream* stream_ = nullptr;  // of the current step, for waiting in the destructor
  std::size_t next_ = 0;       // next bucket to launch
  std::size_t ready_low_ = 0;  // lowest offset announced in this backward pass
  bool active_ = false;        // between begin() and finish()
  ReductionStats stats_;
};

}  // namespace trainer::train
