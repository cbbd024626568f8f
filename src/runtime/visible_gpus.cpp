// Compiled in both builds: the CUDA call exists only with the GPU path.
#include "runtime/visible_gpus.hpp"

#ifdef TRAINER_WITH_CUDA
#include <cuda_runtime_api.h>  // cudaGetDeviceCount
#endif

namespace trainer::runtime {

int visible_gpu_count() {
#ifdef TRAINER_WITH_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error for later callers
    return 0;
  }
  return count;
#else
  return 0;
#endif
}

bool built_with_cuda() {
#ifdef TRAINER_WITH_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace trainer::runtime
