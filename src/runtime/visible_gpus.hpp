#pragma once
// How many GPUs this process can use, as the CUDA runtime counts them (after
// CUDA_VISIBLE_DEVICES). 0 in a CPU-only build or when the call fails (no driver).
namespace trainer::runtime {

int visible_gpu_count();

// Whether this binary has the GPU path (built with TRAINER_CUDA).
bool built_with_cuda();

}  // namespace trainer::runtime
