#include "train/distributed_training.hpp"

#include <algorithm>  // std::fill
#include <cstdio>     // std::snprintf
#include <vector>  // std::vector

#include "comm/host_stream.hpp"        // comm::HostStream
#include "comm/make_communicator.hpp"  // comm::make_communicator
#include "util/error.hpp"              // MPI_CHECK

namespace trainer::train {

// The GradientSync the loop sees: buckets, then the per-step BN bookkeeping.
class DistributedTraining::StepSync final : public GradientSync {
 public:
  StepSync(DistributedTraining& owner, comm::Communicator& scalars, comm::Communicator* buffers_comm)
      : owner_(owner), scalars_(scalars), buffers_comm_(buffers_comm) {}
  bool weighs_loss() const override { return true; }
  float loss_scale(double local_count) override {
    double global = local_count;
    comm::HostStream host;
    scalars_.all_reduce(&global, 1, comm::ReduceOp::sum, host, "loss term count");
    return global > 0 ? static_cast<float>(scalars_.size() * local_count / global) : 1.f;
  }
  void begin(std::size_t offset, std::size_t count, compute::Stream& stream) override {
    owner_.reducer_->begin(offset, count, stream);
  }
  void on_ready(std::size_t offset, std::size_t count, compute::Stream& stream) override {
    owner_.reducer_->on_ready(offset, count, stream);
  }
  void finish(compute::Stream& stream) override {
    owner_.reducer_->finish(stream);
    if (owner_.bn_sync_) owner_.bn_sync_->new_step();
    auto& store = owner_.model_.store();
    if (buffers_comm_ && store.buffer_count() > 0) {
      buffers_comm_->broadcast(store.buffers_data(), store.buffer_count(), 0, stream,
                               "broadcast BN running statistics");
    }
    owner_.set_step(owner_.step_ + 1);
  }

 private:
  DistributedTraining& owner_;
  comm::Communicator& scalars_;
  comm::Communicator* buffers_comm_;  // set when buffers are broadcast every step
};

class DistributedTraining::Metrics final : public MetricReducer {
 public:
  explicit Metrics(comm::Communicator& comm) : comm_(comm) {}
  void sum(double* values, std::size_t count) override {
    comm::HostStream host;
    comm_.all_reduce(values, count, comm::ReduceOp::sum, host, "metric sums");
  }

 private:
  comm::Communicator& comm_;
};

DistributedTraining::DistributedTraining(MPI_Comm world, const std::string& backend,
                                         const DistributedConfig& config, model::PoseModel& model,
                                         int device, const runtime::Watchdog* watchdog)
    : config_(config), model_(model) {
  MPI_CHECK(MPI_Comm_rank(world, &rank_));
  MPI_CHECK(MPI_Comm_size(world, &size_));
  if (size_ == 1) return;
  // With GPU buffers and a host backend, the model's (CUDA) backend gives the pinned
  // staging memory.
  comm_ = comm::make_communicator(backend, world, config.collective_timeout, device,
                                  comm::NcclSettings{config.nccl_debug, config.nccl_socket_nthreads}, watchdog,
                                  &model.store().backend());
  comm::Communicator* scalars = comm_.get();
  if (comm_->uses_device_buffers()) {
    host_comm_ = comm::make_communicator("mpi", world, config.collective_timeout, -1, {}, watchdog);
    scalars = host_comm_.get();
  }
  auto& store = model_.store();
  BucketConfig buckets;
  buckets.bucket_cap_mb = config.bucket_cap_mb;
  buckets.first_bucket_mb = config.first_bucket_mb;
  buckets.manual = config.manual_gradient_reduction;
  reducer_ = std::make_unique<BucketReducer>(*comm_, store.grads_data(), buckets);
  if (config.sync_batchnorm) bn_sync_ = std::make_unique<SyncBatchNorm>(*comm_, *scalars);
  const bool broadcast_each_step = !config.sync_batchnorm && config.broadcast_buffers;
  step_sync_ = std::make_unique<StepSync>(*this, *scalars, broadcast_each_step ? comm_.get() : nullptr);
  metrics_ = std::make_unique<Metrics>(*scalars);
}

DistributedTraining::~DistributedTraining() = default;

void DistributedTraining::broadcast_initial_state(Optimizer& optimizer, compute::Stream& stream) {
  if (size_ == 1) return;
  auto& store = model_.store();
  comm_->broadcast(store.params_data(), store.parameter_count(), 0, stream, "broadcast initial parameters");
  if (store.buffer_count() > 0)
    comm_->broadcast(store.buffers_data(), store.buffer_count(), 0, stream, "broadcast initial buffers");
  if (optimizer.size() > 0) {
    comm_->broadcast(optimizer.exp_avg(), optimizer.size(), 0, stream, "broadcast optimizer state");
    comm_->broadcast(optimizer.exp_avg_sq(), optimizer.size(), 0, stream, "broadcast optimizer state");
  }
  // Host integers (BN num_batches_tracked, optimizer group steps): rank 0's values,
  // carried as doubles (exact below 2^53) through a sum where the others add 0.
  comm::Communicator& scalars = host_comm_ ? *host_comm_ : *comm_;
  std::vector<double> values;
  for (const auto& counter : store.counters()) values.push_back(double(counter.value));
  for (auto id : {model::ParamGroup::backbone, model::ParamGroup::head}) values.push_back(double(optimizer.steps(id, stream)));
  if (rank_ != 0) std::fill(values.begin(), values.end(), 0.0);
  comm::HostStream host;
  scalars.all_reduce(values.data(), values.size(), comm::ReduceOp::sum, host, "broadcast counters");
  std::size_t i = 0;
  for (auto& counter : store.counters()) counter.value = static_cast<std::int64_t>(values[i++]);
  for (auto id : {model::ParamGroup::backbone, model::ParamGroup::head}) optimizer.set_steps(id, static_cast<long>(values[i++]), stream);
}

DistributedHooks DistributedTraining::hooks() {
  DistributedHooks hooks;
  if (size_ == 1) return hooks;
  hooks.gradients = step_sync_.get();
  hooks.metrics = metrics_.get();
  hooks.bn_sync = bn_sync_.get();
  return hooks;
}

void DistributedTraining::set_step(long step) {
  step_ = step;
  if (comm_) comm_->set_step(step);
  if (host_comm_) host_comm_->set_step(step);
}

std::string DistributedTraining::overlap_report() const {
  if (!reducer_) return "";
  const ReductionStats& s = reducer_->stats();
  if (s.steps == 0) return "";
  char line[256];
  if (s.comm_seconds >= 0) {
    std::snprintf(line, sizeof line,
                  "gradient all-reduce (%s, %d ranks, %zu buckets%s): %.1f ms/step, %.1f ms/step exposed after "
                  "backward, %.0f%% hidden behind backward",
                  comm_->name().c_str(), size_, reducer_->buckets().size(),
                  config_.manual_gradient_reduction ? ", manual" : "", 1e3 * s.comm_seconds / s.steps,
                  1e3 * s.exposed_seconds / s.steps, 100.0 * s.hidden_fraction());
  } else {
    std::snprintf(line, sizeof line, "gradient all-reduce (%s, %d ranks): %.1f ms/step exposed after backward",
                  comm_->name().c_str(), size_, 1e3 * s.exposed_seconds / s.steps);
  }
  return line;
}

}  // namespace trainer::train
