#include "comm/cuda/device_allreduce_bench.hpp"

#include <chrono>  // std::chrono::steady_clock

#include "compute/cuda/cuda_check.hpp"     // CUDA_CHECK
#include "compute/cuda/cuda_stream.hpp"    // CudaStream
#include "compute/cuda/device_memory.hpp"  // DeviceMemory

namespace trainer::comm {

double time_device_all_reduce(Communicator& comm, std::size_t count, int warmup, int iters) {
  compute::cuda::CudaStream stream;
  compute::cuda::DeviceMemory buffer(count * sizeof(float));
  auto* data = static_cast<float*>(buffer.get());
  // Zeros stay zeros under repeated in-place sums (no overflow to inf).
  CUDA_CHECK(cudaMemsetAsync(data, 0, count * sizeof(float), stream.get()));
  for (int i = 0; i < warmup; ++i) comm.all_reduce(data, count, ReduceOp::sum, stream, "bench warm-up");
  stream.synchronize();
  comm.barrier("bench barrier");
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) comm.all_reduce(data, count, ReduceOp::sum, stream, "bench all_reduce");
  stream.synchronize();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return iters > 0 ? seconds / iters : 0.0;
}

}  // namespace trainer::comm
