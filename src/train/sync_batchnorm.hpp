#pragma once
// Synchronized batch norm (lightning-pose trains with it): the batch statistics
// of every BN layer cover the global batch. In forward each layer all-gathers its
// per-channel (mean, M2, count) (2C+1 floats per rank) and merges them in rank
// order with Chan's formula (as PyTorch's SyncBatchNorm), in backward it
// all-reduces the sums of dy and dy*(x-mean); every rank then normalizes with the same mean and
// variance and gets the same gradient terms, exactly as one process with the
// whole batch would (up to floating-point reassociation).
//
// global_count() needs the global batch of the step: the first layer of a step
// all-reduces the local batch sizes once (ranks may differ: the last, short batch
// of an epoch split unevenly); new_step() forgets it. Every rank makes the same
// calls in the same order, so that all-reduce happens at the same place on all.
#include <cstddef>  // std::size_t

#include "comm/communicator.hpp"  // comm::Communicator
#include "model/hooks.hpp"        // model::BatchNormSync

namespace trainer::train {

class SyncBatchNorm final : public model::BatchNormSync {
 public:
  // `tensors` all-reduces the statistics (device buffers for NCCL); `scalars`
  // all-reduces host numbers (a host communicator; may be the same object).
  SyncBatchNorm(comm::Communicator& tensors, comm::Communicator& scalars);

  void all_reduce_sum(float* data, std::size_t count, compute::Stream& stream) override;
  void all_gather(const float* send, float* recv, std::size_t count_per_rank, compute::Stream& stream) override;
  int ranks() const override { return tensors_.size(); }
  double global_count(double local_values, int local_batch) override;
  // Called once per training step on every rank (after backward).
  void new_step() { have_global_batch_ = false; }
  void new_batch() override { new_step(); }

 private:
  comm::Communicator& tensors_;
  comm::Communicator& scalars_;
  bool have_global_batch_ = false;
  int local_batch_ = 0;
  double global_batch_ = 0;
};

}  // namespace trainer::train
