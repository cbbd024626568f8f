#include "compute/cuda/fastest_run.hpp"

#include "compute/cuda/cuda_check.hpp"   // CUDA_CHECK
#include "compute/cuda/cuda_stream.hpp"  // CudaEvent

namespace trainer::compute::cuda {

bool stream_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  return capture != cudaStreamCaptureStatusNone;
}

double fastest_run_ms(cudaStream_t stream, const std::function<bool()>& enqueue, int timed_runs) {
  if (!enqueue()) return -1;  // the warm-up: first-call costs (module loads, caches) stay out of the times
  CudaEvent start(true), stop(true);
  double best = -1;
  for (int run = 0; run < timed_runs; ++run) {
    CUDA_CHECK(cudaEventRecord(start.get(), stream));
    const bool ran = enqueue();
    CUDA_CHECK(cudaEventRecord(stop.get(), stream));
    stop.synchronize();  // an asynchronous fault surfaces here, and ends the run
    if (!ran) return -1;
    const double ms = stop.elapsed_ms_since(start);
    if (best < 0 || ms < best) best = ms;
  }
  return best;
}

}  // namespace trainer::compute::cuda
