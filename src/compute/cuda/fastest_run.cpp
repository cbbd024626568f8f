#include "compute/cuda/fastest_run.hpp"

#include <memory>  // std::unique_ptr
#include <vector>  // std::vector

#include "compute/cuda/cuda_check.hpp"   // CUDA_CHECK, CUDA_CHECK_LAUNCH
#include "compute/cuda/cuda_stream.hpp"  // CudaEvent
#include "util/error.hpp"                // TRAINER_ASSERT
#include "hold.cuh"                      // kernels::hold_stream

namespace trainer::compute::cuda {
namespace {

// Longer than enqueuing a few cuDNN calls takes (tens of microseconds each once warm),
// short enough to cost little: it is paid once per timed candidate and shape.
constexpr unsigned kHoldMicroseconds = 500;

}  // namespace

bool stream_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  return capture != cudaStreamCaptureStatusNone;
}

double fastest_run_ms(cudaStream_t stream, const std::function<bool()>& enqueue, int timed_runs) {
  TRAINER_ASSERT(timed_runs >= 1, "fastest_run_ms needs at least one timed run, not " << timed_runs);
  if (!enqueue()) return -1;  // the warm-up: first-call costs (module loads, caches) stay out of the times
  std::vector<std::unique_ptr<CudaEvent>> starts, stops;
  kernels::hold_stream(kHoldMicroseconds, stream);
  CUDA_CHECK_LAUNCH();
  bool ran = true;
  for (int run = 0; run < timed_runs && ran; ++run) {
    starts.push_back(std::make_unique<CudaEvent>(true));
    stops.push_back(std::make_unique<CudaEvent>(true));
    CUDA_CHECK(cudaEventRecord(starts.back()->get(), stream));
    ran = enqueue();
    CUDA_CHECK(cudaEventRecord(stops.back()->get(), stream));
  }
  stops.back()->synchronize();  // an asynchronous fault surfaces here, and ends the run
  if (!ran) return -1;
  double best = -1;
  for (std::size_t i = 0; i < stops.size(); ++i) {
    const double ms = stops[i]->elapsed_ms_since(*starts[i]);
    if (best < 0 || ms < best) best = ms;
  }
  return best;
}

}  // namespace trainer::compute::cuda
