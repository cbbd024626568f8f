#include "train/bucket_reducer.hpp"

#include <algorithm>  // std::min, std::max
#include <chrono>     // std::chrono::steady_clock

#include "util/error.hpp"  // TRAINER_ASSERT

namespace trainer::train {

namespace {
std::size_t mib_to_floats(double mb) {
  return std::max<std::size_t>(1, static_cast<std::size_t>(mb * 1024.0 * 1024.0 / sizeof(float)));
}
}  // namespace

std::vector<Bucket> plan_buckets(std::size_t offset, std::size_t count, const BucketConfig& config) {
  std::vector<Bucket> buckets;
  std::size_t end = offset + count;
  std::size_t cap = mib_to_floats(config.first_bucket_mb);
  while (end > offset) {
    const std::size_t n = std::min(cap, end - offset);
    buckets.push_back({end - n, n});
    end -= n;
    cap = mib_to_floats(config.bucket_cap_mb);
  }
  return buckets;
}

BucketReducer::BucketReducer(comm::Communicator& comm, float* gradients, BucketConfig config)
    : comm_(comm), gradients_(gradients), config_(config) {}

BucketReducer::~BucketReducer() {
  // An exception may leave all-reduces in flight: they still write into the
  // gradients, so they must end before anyone frees them.
  for (auto& work : in_flight_) {
    try {
      work->wait(*stream_);
    } catch (...) {
      // Already unwinding from another error; this one adds nothing.
    }
  }
}

void BucketReducer::begin(std::size_t offset, std::size_t count, compute::Stream& stream) {
  TRAINER_ASSERT(!active_, "GradientSync::begin called twice without finish");
  stream_ = &stream;
  if (buckets_.empty() || offset != range_offset_ || count != range_count_) {
    // New range (first step, or the backbone was unfrozen): same on every rank.
    range_offset_ = offset;
    range_count_ = count;
    buckets_ = config_.manual ? std::vector<Bucket>{} : plan_buckets(offset, count, config_);
    names_.clear();
    for (std::size_t i = 0; i < buckets_.size(); ++i) names_.push_back("gradient bucket " + std::to_string(i));
  }
  next_ = 0;
  ready_low_ = offset + count;
  in_flight_.clear();
  active_ = true;
}

void BucketReducer::launch_ready(compute::Stream& stream) {
  while (next_ < buckets_.size() && buckets_[next_].offset >= ready_low_) {
    const Bucket& b = buckets_[next_];
    in_flight_.push_back(comm_.all_reduce_async(gradients_ + b.offset, b.count, comm::ReduceOp::avg, stream,
                                                names_[next_].c_str()));
    ++next_;
  }
}

void BucketReducer::on_ready(std::size_t offset, std::size_t count, compute::Stream& stream) {
  if (!active_ || config_.manual) return;
  TRAINER_ASSERT(offset + count <= ready_low_ || offset + count > range_offset_ + range_count_,
                 "gradients announced out of order (offset " << offset << ")");
  if (offset < range_offset_ || offset >= range_offset_ + range_count_) return;  // not trained this step
  ready_low_ = std::min(ready_low_, offset);
  launch_ready(stream);
}

void BucketReducer::finish(compute::Stream& stream) {
  TRAINER_ASSERT(active_, "GradientSync::finish without begin");
  active_ = false;
  const auto start = std::chrono::steady_clock::now();
  double comm_s = 0;
  bool comm_known = true;
  if (config_.manual) {
    if (range_count_ > 0) {
      comm_.all_reduce(gradients_ + range_offset_, range_count_, comm::ReduceOp::avg, stream,
                       "gradients (manual reduction)");
    }
    comm_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    stats_.buckets += range_count_ > 0 ? 1 : 0;
  } else {
    ready_low_ = range_offset_;  // whatever was not announced is final now
    launch_ready(stream);
    for (auto& work : in_flight_) {
      work->wait(stream);
      const double s = work->seconds();
      if (s < 0) comm_known = false;
      comm_s += s;
    }
    stats_.buckets += static_cast<long>(in_flight_.size());
    in_flight_.clear();
  }
  const double exposed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats_.steps += 1;
  stats_.exposed_seconds += exposed;
  if (!comm_known || stats_.comm_seconds < 0) {
    stats_.comm_seconds = -1;
  } else {
    stats_.comm_seconds += comm_s;
  }
}

}  // namespace trainer::train
