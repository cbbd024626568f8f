// See hold.cuh.
#include "hold.cuh"

namespace trainer::kernels {
namespace {

__device__ unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void hold_kernel(unsigned long long nanoseconds) {
  const unsigned long long start = global_timer_ns();
  while (global_timer_ns() - start < nanoseconds) __nanosleep(1000);
}

}  // namespace

void hold_stream(unsigned microseconds, cudaStream_t stream) {
  hold_kernel<<<1, 1, 0, stream>>>(1000ull * microseconds);
}

}  // namespace trainer::kernels
