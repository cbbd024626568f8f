#pragma once
// Timing device work once per shape, as the convolution autotuners do (graph-autotune
// among a graph's plans, autotune between the graph API and the legacy calls): on the
// stream the work runs on, with events, waiting for that stream. Never inside a stream
// capture: nothing recorded can be timed, and waiting would break the capture.
//
// The timed runs are enqueued behind a kernel that holds the stream (kernels/hold.cuh)
// for longer than the host needs to enqueue them, so each pair of events measures the
// device's time alone. Recorded on an idle stream, an event pair would also count the
// host's time to enqueue the call, which is larger for cuDNN's legacy calls than for a
// graph-API plan (a reviewer's finding, 2026-11-28): the race would favour the lighter
// host path, while recorded steps (CUDA graphs) pay device time only.
#include <cuda_runtime.h>  // cudaStream_t

#include <functional>  // std::function

namespace trainer::compute::cuda {

// Whether `stream` is recording a CUDA graph now.
bool stream_capturing(cudaStream_t stream);

// Milliseconds of the fastest of `timed_runs` runs of enqueue() after one warm-up run;
// negative when enqueue() returns false (the work was refused: nothing to time).
double fastest_run_ms(cudaStream_t stream, const std::function<bool()>& enqueue, int timed_runs = 3);

}  // namespace trainer::compute::cuda
