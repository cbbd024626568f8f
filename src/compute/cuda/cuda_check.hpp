#pragma once
// CHECK macros for the CUDA runtime, cuDNN and cuBLAS: a failed call throws
// trainer::SystemError naming the call, file, line and the library's own error
// string. (NCCL_CHECK lives in comm/cuda/nccl_check.hpp, next to its only users.)
#include <cublas_v2.h>        // cublasStatus_t, cublasGetStatusString
#include <cuda_runtime_api.h> // cudaError_t, cudaGetErrorString
#include <cudnn.h>            // cudnnStatus_t, cudnnGetErrorString

#include "util/error.hpp"  // trainer::detail::throw_system_error

#define CUDA_CHECK(call)                                                                           \
  do {                                                                                             \
    cudaError_t trainer_cuda_rc_ = (call);                                                         \
    if (trainer_cuda_rc_ != cudaSuccess) {                                                         \
      ::trainer::detail::throw_system_error(                                                       \
          "CUDA", #call,                                                                           \
          std::string(cudaGetErrorName(trainer_cuda_rc_)) + ": " +                                 \
              cudaGetErrorString(trainer_cuda_rc_),                                                \
          __FILE__, __LINE__);                                                                     \
    }                                                                                              \
  } while (0)

#define CUDNN_CHECK(call)                                                                          \
  do {                                                                                             \
    cudnnStatus_t trainer_cudnn_rc_ = (call);                                                      \
    if (trainer_cudnn_rc_ != CUDNN_STATUS_SUCCESS) {                                               \
      ::trainer::detail::throw_system_error("cuDNN", #call,                                        \
                                            cudnnGetErrorString(trainer_cudnn_rc_), __FILE__,      \
                                            __LINE__);                                             \
    }                                                                                              \
  } while (0)

#define CUBLAS_CHECK(call)                                                                         \
  do {                                                                                             \
    cublasStatus_t trainer_cublas_rc_ = (call);                                                    \
    if (trainer_cublas_rc_ != CUBLAS_STATUS_SUCCESS) {                                             \
      ::trainer::detail::throw_system_error("cuBLAS", #call,                                       \
                                            cublasGetStatusString(trainer_cublas_rc_), __FILE__,   \
                                            __LINE__);                                             \
    }                                                                                              \
  } while (0)

// Kernel launches report configuration errors only through cudaGetLastError.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
