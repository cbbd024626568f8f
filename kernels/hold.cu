// See hold.cuh.
#include "hold.cuh"

namespace trainer::kernels {
namespace {

__device__ unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// The iteration cap ends the hold even if the timer stood still: each iteration sleeps
// about a microsecond, so 64 per microsecond asked for is ample.
__global__ void hold_kernel(unsigned long long nanoseconds) {
  const unsigned long long start = global_timer_ns();
  const unsigned long long max_iterations = nanoseconds / 16 + 1024;
  for (unsigned long long i = 0; i < max_iterations && global_timer_ns() - start < nanoseconds; ++i)
    __nanosleep(1000);
}

}  // namespace

void hold_stream(unsigned microseconds, cudaStream_t stream) {
  hold_kernel<<<1, 1, 0, stream>>>(1000ull * microseconds);
}

}  // namespace trainer::kernels
