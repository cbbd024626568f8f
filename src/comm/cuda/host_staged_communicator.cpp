#include "comm/cuda/host_staged_communicator.hpp"

#include <cuda_runtime_api.h>  // cudaMemcpyAsync, cudaPointerGetAttributes

#include <cstddef>  // std::size_t

#include "comm/host_stream.hpp"          // HostStream for the wrapped communicator
#include "compute/host_buffer.hpp"       // compute::HostBuffer, ensure_capacity
#include "compute/cuda/cuda_check.hpp"   // CUDA_CHECK
#include "compute/cuda/cuda_stream.hpp"  // as_cuda
#include "util/error.hpp"                // TRAINER_ASSERT

namespace trainer::comm {
namespace {

bool is_device_pointer(const void* p) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
}

// The host backends complete their work before wait() returns; staged work has
// already been copied back when the Work is made.
class DoneWork final : public Work {
 public:
  void wait(compute::Stream&) override {}
};

class HostStagedCommunicator final : public Communicator {
 public:
  HostStagedCommunicator(std::unique_ptr<Communicator> host, compute::Backend& memory)
      : host_(std::move(host)), memory_(memory) {
    TRAINER_ASSERT(host_ && !host_->uses_device_buffers(),
                   "host staging wraps a host communicator (mpi or gloo)");
  }

  std::string name() const override { return host_->name(); }
  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  bool uses_device_buffers() const override { return true; }

  void all_reduce(float* data, std::size_t count, ReduceOp op, compute::Stream& stream,
                  const char* what) override {
    reduce(data, count, op, stream, what);
  }
  void all_reduce(double* data, std::size_t count, ReduceOp op, compute::Stream& stream,
                  const char* what) override {
    reduce(data, count, op, stream, what);
  }
  std::unique_ptr<Work> all_reduce_async(float* data, std::size_t count, ReduceOp op,
                                         compute::Stream& stream, const char* what) override {
    reduce(data, count, op, stream, what);
    return std::make_unique<DoneWork>();
  }

  void broadcast(float* data, std::size_t count, int root, compute::Stream& stream,
                 const char* what) override {
    if (!count) return;
    if (!is_device_pointer(data)) return host_->broadcast(data, count, root, host_stream_, what);
    cudaStream_t s = compute::cuda::as_cuda(stream).get();
    auto* host = staging<float>(count);
    to_host(host, data, count * sizeof(float), s);
    host_->broadcast(host, count, root, host_stream_, what);
    to_device(data, host, count * sizeof(float), s);
  }

  void all_gather(const float* send, float* recv, std::size_t count_per_rank,
                  compute::Stream& stream, const char* what) override {
    if (!count_per_rank) return;
    if (!is_device_pointer(send) && !is_device_pointer(recv))
      return host_->all_gather(send, recv, count_per_rank, host_stream_, what);
    cudaStream_t s = compute::cuda::as_cuda(stream).get();
    const std::size_t send_bytes = count_per_rank * sizeof(float);
    auto* host = staging<float>(count_per_rank * (size() + 1));
    float* host_send = host + count_per_rank * size();  // after the receive area
    to_host(host_send, send, send_bytes, s);
    host_->all_gather(host_send, host, count_per_rank, host_stream_, what);
    to_device(recv, host, send_bytes * size(), s);
  }

  void barrier(const char* what) override { host_->barrier(what); }
  void set_step(long step) override { host_->set_step(step); }

 private:
  // The staging area as `count` elements of T, grown (never shrunk) as needed. Every
  // collective waits for its copies, so the area is free again when one returns.
  template <typename T>
  T* staging(std::size_t count) {
    compute::ensure_capacity(memory_, staging_, count * sizeof(T));
    return reinterpret_cast<T*>(staging_.data());
  }
  template <typename T>
  void reduce(T* data, std::size_t count, ReduceOp op, compute::Stream& stream, const char* what) {
    if (!count) return;
    if (!is_device_pointer(data)) return host_->all_reduce(data, count, op, host_stream_, what);
    cudaStream_t s = compute::cuda::as_cuda(stream).get();
    auto* host = staging<T>(count);
    to_host(host, data, count * sizeof(T), s);
    host_->all_reduce(host, count, op, host_stream_, what);
    to_device(data, host, count * sizeof(T), s);
  }
  // Copies after the work queued on `s` and waits: the host reduction needs the values.
  static void to_host(void* host, const void* device, std::size_t bytes, cudaStream_t s) {
    CUDA_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
  }
  // Waits too, so the staging buffer is free for the next collective (which may
  // come on another stream).
  static void to_device(void* device, const void* host, std::size_t bytes, cudaStream_t s) {
    CUDA_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
  }

  std::unique_ptr<Communicator> host_;
  HostStream host_stream_;
  compute::Backend& memory_;
  compute::HostBuffer<unsigned char> staging_;  // pinned: the CUDA backend's host memory
};

}  // namespace

std::unique_ptr<Communicator> make_host_staged_communicator(std::unique_ptr<Communicator> host,
                                                            compute::Backend& memory) {
  return std::make_unique<HostStagedCommunicator>(std::move(host), memory);
}

}  // namespace trainer::comm
