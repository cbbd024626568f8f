#pragma once
// Everything that makes one training run data-parallel, built once per run from
// the [distributed] config and handed to the epoch loop as DistributedHooks:
// - the communicator (nccl | mpi | gloo) and, for NCCL, a host (MPI) one for
//   scalars such as metric sums and batch sizes;
// - at the start, rank 0's parameters, buffers, BN counters and optimizer state
//   broadcast to every rank (so a checkpoint or --init-weights read by rank 0 only
//   is enough, and all ranks start identical whatever happened before);
// - per step: each rank's loss weighed by its share of the counted keypoints,
//   gradient averaging in buckets (BucketReducer), synchronized batch
//   norm (SyncBatchNorm), or with sync_batchnorm off and broadcast_buffers on,
//   rank 0's BN running statistics broadcast after each step (VISSL);
// - metric sums over ranks (Lightning's sync_dist), every rank taking part.
// With one rank nothing is created and the hooks are the loop's local defaults.
#include <mpi.h>  // MPI_Comm

#include <memory>  // std::unique_ptr
#include <string>  // std::string

#include "config/config.hpp"             // DistributedConfig
#include "comm/communicator.hpp"      // comm::Communicator
#include "model/pose_model.hpp"       // model::PoseModel
#include "runtime/watchdog.hpp"       // runtime::Watchdog
#include "train/bucket_reducer.hpp"   // BucketReducer, ReductionStats
#include "train/optimizer.hpp"        // Optimizer
#include "train/sync_batchnorm.hpp"   // SyncBatchNorm
#include "train/train_loop.hpp"       // DistributedHooks

namespace trainer::train {

class DistributedTraining {
 public:
  // `backend` is the resolved one (nccl, mpi or gloo); `device` the local GPU or -1;
  // `watchdog` the session's (may be null), whose heartbeats name a stalled rank.
  DistributedTraining(MPI_Comm world, const std::string& backend, const DistributedConfig& config,
                      model::PoseModel& model, int device = -1, const runtime::Watchdog* watchdog = nullptr);
  ~DistributedTraining();
  DistributedTraining(const DistributedTraining&) = delete;
  DistributedTraining& operator=(const DistributedTraining&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool active() const { return size_ > 1; }

  // Rank 0's parameters, buffers, BN counters and optimizer state to every rank.
  void broadcast_initial_state(Optimizer& optimizer, compute::Stream& stream);
  // For the epoch loop; all null (local) with one rank.
  DistributedHooks hooks();
  // Collective timeouts report this step (counted on by itself after each step).
  void set_step(long step);
  // One line on the gradient all-reduce: time per step, exposed, hidden share.
  std::string overlap_report() const;

 private:
  class StepSync;
  class Metrics;

  int rank_ = 0;
  int size_ = 1;
  long step_ = 0;
  DistributedConfig config_;
  model::PoseModel& model_;
  std::unique_ptr<comm::Communicator> comm_;
  std::unique_ptr<comm::Communicator> host_comm_;  // NCCL runs only: scalars on the host
  std::unique_ptr<SyncBatchNorm> bn_sync_;
  std::unique_ptr<BucketReducer> reducer_;
  std::unique_ptr<StepSync> step_sync_;
  std::unique_ptr<Metrics> metrics_;
};

}  // namespace trainer::train
