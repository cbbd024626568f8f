#include "comm/cuda/nccl_communicator.hpp"

#include <cuda_runtime_api.h>  // cudaSetDevice
#include <nccl.h>              // ncclAllReduce, ...

#include <cstdlib>    // setenv
#include <exception>  // std::uncaught_exceptions
#include <string>     // std::to_string

#include "comm/cuda/nccl_check.hpp"      // NCCL_CHECK
#include "comm/cuda/nccl_watchdog.hpp"   // nccl::Watchdog
#include "compute/cuda/cuda_check.hpp"   // CUDA_CHECK
#include "compute/cuda/device_memory.hpp" // DeviceMemory
#include "compute/cuda/cuda_stream.hpp"  // CudaStream, CudaEvent, as_cuda
#include "util/error.hpp"                // MPI_CHECK, SystemError

namespace trainer::comm {
namespace {

using compute::cuda::as_cuda;
using compute::cuda::CudaEvent;
using compute::cuda::CudaStream;
using compute::cuda::DeviceMemory;

ncclRedOp_t to_nccl(ReduceOp op) { return op == ReduceOp::avg ? ncclAvg : ncclSum; }

// A collective in flight: the caller's stream waits on the event recorded after it.
class NcclWork final : public Work {
 public:
  NcclWork(std::shared_ptr<compute::Event> done, std::shared_ptr<const nccl::Watchdog> watchdog)
      : done_(std::move(done)), watchdog_(std::move(watchdog)) {}
  void wait(compute::Stream& stream) override {
    if (watchdog_->aborted()) throw SystemError(watchdog_->message());
    stream.wait(*done_);
  }

 private:
  std::shared_ptr<compute::Event> done_;
  std::shared_ptr<const nccl::Watchdog> watchdog_;  // outlives the communicator if need be
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(MPI_Comm world, int device, double timeout_s, const NcclOptions& options) {
    MPI_CHECK(MPI_Comm_rank(world, &rank_));
    MPI_CHECK(MPI_Comm_size(world, &size_));
    // NCCL reads its environment when the communicator is created.
    if (!options.debug.empty()) setenv("NCCL_DEBUG", options.debug.c_str(), 1);
    if (options.socket_nthreads > 0)
      setenv("NCCL_SOCKET_NTHREADS", std::to_string(options.socket_nthreads).c_str(), 1);
    ncclUniqueId id{};
    if (rank_ == 0) NCCL_CHECK(ncclGetUniqueId(&id), rank_);
    MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, world));
    CUDA_CHECK(cudaSetDevice(device));
    // Highest priority so bucket all-reduces are not starved by compute kernels.
    int least = 0, greatest = 0;
    CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    stream_ = std::make_unique<CudaStream>(greatest);
    barrier_buffer_ = DeviceMemory(sizeof(float));  // on `device`, now current
    NCCL_CHECK(ncclCommInitRank(&comm_, size_, id, rank_), rank_);
    try {
      watchdog_ = std::make_shared<nccl::Watchdog>(comm_, device, rank_, size_, timeout_s);
    } catch (...) {
      ncclCommAbort(comm_);  // the destructor does not run for a failed constructor
      throw;
    }
  }

  ~NcclCommunicator() override {
    if (watchdog_) watchdog_->stop();  // first: no abort from the thread while we tear down
    const bool aborted = watchdog_ && watchdog_->aborted();
    if (comm_ && !aborted) {
      if (std::uncaught_exceptions() > 0) {
        // Unwinding after a failure: other ranks may never join again, so do not
        // wait for pending collectives.
        ncclCommAbort(comm_);
      } else {
        ncclCommFinalize(comm_);  // waits for this rank's pending collectives
        ncclCommDestroy(comm_);
      }
    }
    stream_.reset();
  }

  std::string name() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool uses_device_buffers() const override { return true; }

  void all_reduce(float* data, std::size_t count, ReduceOp op, compute::Stream& stream,
                  const char* what) override {
    stream.wait(*enqueue_all_reduce(data, count, ncclFloat, op, stream, what));
  }
  void all_reduce(double* data, std::size_t count, ReduceOp op, compute::Stream& stream,
                  const char* what) override {
    stream.wait(*enqueue_all_reduce(data, count, ncclDouble, op, stream, what));
  }
  std::unique_ptr<Work> all_reduce_async(float* data, std::size_t count, ReduceOp op,
                                         compute::Stream& stream, const char* what) override {
    return std::make_unique<NcclWork>(enqueue_all_reduce(data, count, ncclFloat, op, stream, what),
                                      watchdog_);
  }

  void broadcast(float* data, std::size_t count, int root, compute::Stream& stream,
                 const char* what) override {
    begin(stream);
    NCCL_CHECK(ncclBroadcast(data, data, count, ncclFloat, root, comm_, stream_->get()), rank_);
    stream.wait(*finish(what));
  }

  void all_gather(const float* send, float* recv, std::size_t count_per_rank,
                  compute::Stream& stream, const char* what) override {
    begin(stream);
    NCCL_CHECK(ncclAllGather(send, recv, count_per_rank, ncclFloat, comm_, stream_->get()), rank_);
    stream.wait(*finish(what));
  }

  // A one-float all-reduce that the host waits for; the watchdog bounds the wait.
  void barrier(const char* what) override {
    check_alive();
    float* one = static_cast<float*>(barrier_buffer_.get());
    NCCL_CHECK(ncclAllReduce(one, one, 1, ncclFloat, ncclSum, comm_,
                             stream_->get()),
               rank_);
    auto done = finish(what);
    const cudaError_t rc = cudaStreamSynchronize(stream_->get());
    check_alive();  // an abort while waiting is reported as such, not as a CUDA error
    CUDA_CHECK(rc);
  }

  void set_step(long step) override { step_ = step; }

 private:
  void check_alive() const {
    if (watchdog_->aborted()) throw SystemError(watchdog_->message());
  }
  // The communication stream waits for the work queued so far on `stream`.
  void begin(compute::Stream& stream) {
    check_alive();
    auto ready = stream.record();
    stream_->wait(*ready);
  }
  // Records completion on the communication stream and hands it to the watchdog.
  std::shared_ptr<compute::Event> finish(const char* what) {
    std::shared_ptr<compute::Event> done = stream_->record();
    const auto& event = dynamic_cast<const CudaEvent&>(*done);
    watchdog_->watch(done, event.get(), what ? what : "collective", step_);
    return done;
  }
  std::shared_ptr<compute::Event> enqueue_all_reduce(void* data, std::size_t count,
                                                     ncclDataType_t type, ReduceOp op,
                                                     compute::Stream& stream, const char* what) {
    begin(stream);
    NCCL_CHECK(ncclAllReduce(data, data, count, type, to_nccl(op), comm_, stream_->get()), rank_);
    return finish(what);
  }

  int rank_ = 0, size_ = 1;
  long step_ = 0;
  ncclComm_t comm_ = nullptr;
  std::unique_ptr<CudaStream> stream_;
  DeviceMemory barrier_buffer_;  // one float for barrier()
  std::shared_ptr<nccl::Watchdog> watchdog_;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm world, int device_ordinal,
                                                     double timeout_s, const NcclOptions& options) {
  return std::make_unique<NcclCommunicator>(world, device_ordinal, timeout_s, options);
}

std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm world, int device_ordinal,
                                                     double timeout_s) {
  return make_nccl_communicator(world, device_ordinal, timeout_s, NcclOptions{});
}

}  // namespace trainer::comm
