#pragma once
// TRAINER_HOST_DEVICE marks inline functions that host code and CUDA kernels share
// (one definition of a rule for the CPU twin and the kernel): __host__ __device__
// under nvcc, nothing for the host compiler.
#if defined(__CUDACC__)
#define TRAINER_HOST_DEVICE __host__ __device__
#else
#define TRAINER_HOST_DEVICE
#endif
