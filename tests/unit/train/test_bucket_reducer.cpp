// BucketReducer and SyncBatchNorm against a recording communicator: bucket plan
// (first bucket small, the rest capped, from the end of the buffer), launch as
// soon as a bucket's gradients are final, same order whatever the announcement
// granularity, manual reduction, and SyncBatchNorm's one batch all-reduce per step.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/host_stream.hpp"
#include "train/bucket_reducer.hpp"
#include "train/sync_batchnorm.hpp"

using namespace trainer;
using namespace trainer::train;

namespace {

// Pretends to be rank 0 of `ranks`; every other rank holds the same values, so
// avg leaves data unchanged and sum multiplies it by `ranks`.
class RecordingComm final : public comm::Communicator {
 public:
  explicit RecordingComm(int ranks) : ranks_(ranks) {}
  struct Call {
    std::string kind, what;
    const void* data;
    std::size_t count;
  };
  std::vector<Call> calls;
  int pending = 0;

  std::string name() const override { return "recording"; }
  int rank() const override { return 0; }
  int size() const override { return ranks_; }
  bool uses_device_buffers() const override { return false; }
  void all_reduce(float* data, std::size_t count, comm::ReduceOp op, compute::Stream&, const char* what) override {
    calls.push_back({"all_reduce", what, data, count});
    if (op == comm::ReduceOp::sum)
      for (std::size_t i = 0; i < count; ++i) data[i] *= ranks_;
  }
  void all_reduce(double* data, std::size_t count, comm::ReduceOp op, compute::Stream&, const char* what) override {
    calls.push_back({"all_reduce_double", what, data, count});
    if (op == comm::ReduceOp::sum)
      for (std::size_t i = 0; i < count; ++i) data[i] *= ranks_;
  }
  std::unique_ptr<comm::Work> all_reduce_async(float* data, std::size_t count, comm::ReduceOp, compute::Stream&,
                                               const char* what) override {
    calls.push_back({"async", what, data, count});
    struct Done final : comm::Work {
      explicit Done(int& pending) : pending_(pending) { ++pending_; }
      void wait(compute::Stream&) override {
        if (!waited_) --pending_;
        waited_ = true;
      }
      double seconds() const override { return 0.001; }
      int& pending_;
      bool waited_ = false;
    };
    return std::make_unique<Done>(pending);
  }
  void broadcast(float* data, std::size_t count, int, compute::Stream&, const char* what) override {
    calls.push_back({"broadcast", what, data, count});
  }
  void all_gather(const float*, float*, std::size_t, compute::Stream&, const char*) override {}
  void barrier(const char*) override {}
  void set_step(long) override {}

 private:
  int ranks_;
};

constexpr std::size_t kMiB = 1024 * 1024 / sizeof(float);  // floats per MiB

}  // namespace

TEST_CASE("buckets start at the end of the buffer: first small, the rest capped", "[train][distributed]") {
  BucketConfig config;
  config.first_bucket_mb = 1;
  config.bucket_cap_mb = 4;
  const std::size_t total = 10 * kMiB + 123;
  const auto buckets = plan_buckets(100, total, config);
  REQUIRE(buckets.size() == 4);
  CHECK(buckets[0].offset + buckets[0].count == 100 + total);
  CHECK(buckets[0].count == kMiB);
  CHECK(buckets[1].count == 4 * kMiB);
  CHECK(buckets[2].count == 4 * kMiB);
  CHECK(buckets[3].count == kMiB + 123);
  CHECK(buckets[3].offset == 100);
  for (std::size_t i = 1; i < buckets.size(); ++i) CHECK(buckets[i].offset + buckets[i].count == buckets[i - 1].offset);
  CHECK(plan_buckets(0, 0, config).empty());
  CHECK(plan_buckets(0, 10, config).size() == 1);
}

TEST_CASE("a bucket's all-reduce starts as soon as its gradients are final", "[train][distributed]") {
  RecordingComm comm(2);
  comm::HostStream stream;
  std::vector<float> grads(6 * kMiB, 1.f);
  BucketConfig config;
  config.first_bucket_mb = 1;
  config.bucket_cap_mb = 2;
  BucketReducer reducer(comm, grads.data(), config);
  reducer.begin(0, grads.size(), stream);
  REQUIRE(reducer.buckets().size() == 4);  // [5,6) [3,5) [1,3) [0,1) MiB
  // Parameters of 0.5 MiB announced from the end.
  const std::size_t half = kMiB / 2;
  std::vector<std::size_t> launched_after;
  for (std::size_t off = grads.size(); off > 0; off -= half) {
    reducer.on_ready(off - half, half, stream);
    launched_after.push_back(comm.calls.size());
  }
  // Bucket 0 (last MiB) launches after the 2nd parameter, bucket 1 after the 6th...
  CHECK(launched_after[0] == 0);
  CHECK(launched_after[1] == 1);
  CHECK(launched_after[4] == 1);
  CHECK(launched_after[5] == 2);
  CHECK(launched_after[9] == 3);
  CHECK(launched_after[11] == 4);
  reducer.finish(stream);
  CHECK(comm.pending == 0);
  REQUIRE(comm.calls.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(comm.calls[i].what == "gradient bucket " + std::to_string(i));
    CHECK(comm.calls[i].data == grads.data() + reducer.buckets()[i].offset);
  }
  CHECK(reducer.stats().steps == 1);
  CHECK(reducer.stats().buckets == 4);
  CHECK(reducer.stats().comm_seconds == Approx(0.004));
}

TEST_CASE("the launch order does not depend on how gradients are announced", "[train][distributed]") {
  std::vector<float> grads(3 * kMiB + 7);
  BucketConfig config;
  config.first_bucket_mb = 1;
  config.bucket_cap_mb = 1;
  comm::HostStream stream;
  std::vector<std::vector<const void*>> orders;
  for (std::size_t piece : {std::size_t(1000), std::size_t(kMiB / 3), grads.size()}) {
    RecordingComm comm(3);
    BucketReducer reducer(comm, grads.data(), config);
    reducer.begin(0, grads.size(), stream);
    for (std::size_t end = grads.size(); end > 0;) {
      const std::size_t n = std::min(piece, end);
      reducer.on_ready(end - n, n, stream);
      end -= n;
    }
    reducer.finish(stream);
    std::vector<const void*> order;
    for (auto& c : comm.calls) order.push_back(c.data);
    orders.push_back(order);
  }
  CHECK(orders[0] == orders[1]);
  CHECK(orders[1] == orders[2]);
  CHECK(orders[0].size() == 4);
}

TEST_CASE("finish() reduces gradients nobody announced, and only the trained range", "[train][distributed]") {
  RecordingComm comm(2);
  comm::HostStream stream;
  std::vector<float> grads(4 * kMiB);
  BucketConfig config;
  config.first_bucket_mb = 1;
  config.bucket_cap_mb = 1;
  BucketReducer reducer(comm, grads.data(), config);
  // Frozen backbone: only the head [3 MiB, 4 MiB) trains.
  reducer.begin(3 * kMiB, kMiB, stream);
  reducer.on_ready(0, 10, stream);  // outside the range: ignored
  CHECK(comm.calls.empty());
  reducer.finish(stream);
  REQUIRE(comm.calls.size() == 1);
  CHECK(comm.calls[0].data == grads.data() + 3 * kMiB);
  CHECK(comm.calls[0].count == kMiB);
}

TEST_CASE("manual_gradient_reduction: one all-reduce after backward", "[train][distributed]") {
  RecordingComm comm(2);
  comm::HostStream stream;
  std::vector<float> grads(3 * kMiB);
  BucketConfig config;
  config.manual = true;
  BucketReducer reducer(comm, grads.data(), config);
  reducer.begin(0, grads.size(), stream);
  reducer.on_ready(kMiB, 2 * kMiB, stream);
  CHECK(comm.calls.empty());
  reducer.finish(stream);
  REQUIRE(comm.calls.size() == 1);
  CHECK(comm.calls[0].kind == "all_reduce");
  CHECK(comm.calls[0].count == grads.size());
}

TEST_CASE("SyncBatchNorm: statistics summed, global batch asked once per step", "[train][distributed]") {
  RecordingComm comm(3);
  comm::HostStream stream;
  SyncBatchNorm sync(comm, comm);
  std::vector<float> stats = {1, 2, 3, 4};
  sync.all_reduce_sum(stats.data(), stats.size(), stream);
  CHECK(stats == std::vector<float>{3, 6, 9, 12});
  // 4 images of 8x8 per rank, 3 ranks: 12 images.
  CHECK(sync.global_count(4 * 64, 4) == Approx(12 * 64));
  CHECK(sync.global_count(4 * 16, 4) == Approx(12 * 16));
  std::size_t batch_calls = 0;
  for (auto& c : comm.calls) batch_calls += c.kind == "all_reduce_double";
  CHECK(batch_calls == 1);
  sync.new_step();
  CHECK(sync.global_count(2 * 64, 2) == Approx(6 * 64));
  batch_calls = 0;
  for (auto& c : comm.calls) batch_calls += c.kind == "all_reduce_double";
  CHECK(batch_calls == 2);
}
