#pragma once
// A kernel that computes nothing: it keeps a stream busy for a while, so the host can
// enqueue work behind it before the device reaches that work. The autotuners
// (compute/cuda/fastest_run) time each candidate between two events; recorded on an
// idle stream, those would count the host's time to enqueue the call as well, which
// favours the path with the lighter host side rather than the faster kernels.
// No CPU twin: there is nothing to compute.
#include <cuda_runtime_api.h>  // cudaStream_t

namespace trainer::kernels {

// One thread that returns once `microseconds` have passed on the device's global timer.
void hold_stream(unsigned microseconds, cudaStream_t stream);

}  // namespace trainer::kernels
