#include "train/sync_batchnorm.hpp"

#include "comm/host_stream.hpp"  // comm::HostStream
#include "util/error.hpp"        // TRAINER_ASSERT

namespace trainer::train {

SyncBatchNorm::SyncBatchNorm(comm::Communicator& tensors, comm::Communicator& scalars)
    : tensors_(tensors), scalars_(scalars) {
  TRAINER_ASSERT(!scalars_.uses_device_buffers(), "SyncBatchNorm needs a host communicator for scalars");
}

void SyncBatchNorm::all_reduce_sum(float* data, std::size_t count, compute::Stream& stream) {
  tensors_.all_reduce(data, count, comm::ReduceOp::sum, stream, "sync batchnorm statistics");
}

void SyncBatchNorm::all_gather(const float* send, float* recv, std::size_t count_per_rank,
                               compute::Stream& stream) {
  tensors_.all_gather(send, recv, count_per_rank, stream, "sync batchnorm moments");
}

double SyncBatchNorm::global_count(double local_values, int local_batch) {
  if (!have_global_batch_) {
    double batch = local_batch;
    comm::HostStream host;
    scalars_.all_reduce(&batch, 1, comm::ReduceOp::sum, host, "sync batchnorm global batch");
    global_batch_ = batch;
    local_batch_ = local_batch;
    have_global_batch_ = true;
  }
  TRAINER_ASSERT(local_batch == local_batch_, "batch norm layers saw batches of " << local_batch_ << " and "
                                                  << local_batch << " in one step");
  return local_batch > 0 ? local_values / local_batch * global_batch_ : 0.0;
}

}  // namespace trainer::train
