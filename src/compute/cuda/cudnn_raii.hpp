#pragma once
// RAII owners for cuDNN, cuBLAS and cuBLASLt handles and cuDNN descriptors. Each owner is
// move-only; its destructor never throws (a failed destroy at exit is ignored).
#include <cublasLt.h>   // cublasLtHandle_t
#include <cublas_v2.h>  // cublasHandle_t
#include <cudnn.h>      // cudnnHandle_t, descriptors
#include <utility>      // std::exchange

#include "compute/cuda/cuda_check.hpp"  // CUDNN_CHECK, CUBLAS_CHECK

namespace trainer::compute::cuda {

// A move-only owner of one library object: Traits::create() makes it,
// Traits::destroy(h) frees it.
template <typename Traits>
class Owned {
 public:
  using Handle = typename Traits::Handle;
  Owned() : h_(Traits::create()) {}
  ~Owned() {
    if (h_) Traits::destroy(h_);
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  Owned(Owned&& o) noexcept : h_(std::exchange(o.h_, Handle{})) {}
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      if (h_) Traits::destroy(h_);
      h_ = std::exchange(o.h_, Handle{});
    }
    return *this;
  }
  Handle get() const { return h_; }
  operator Handle() const { return h_; }  // NOLINT: implicit so owners pass straight to the library

 private:
  Handle h_{};
};

struct CudnnHandleTraits {
  using Handle = cudnnHandle_t;
  static Handle create() {
    Handle h{};
    CUDNN_CHECK(cudnnCreate(&h));
    return h;
  }
  static void destroy(Handle h) { cudnnDestroy(h); }
};

struct CublasHandleTraits {
  using Handle = cublasHandle_t;
  static Handle create() {
    Handle h{};
    CUBLAS_CHECK(cublasCreate(&h));
    return h;
  }
  static void destroy(Handle h) { cublasDestroy(h); }
};

struct CublasLtHandleTraits {
  using Handle = cublasLtHandle_t;
  static Handle create() {
    Handle h{};
    CUBLAS_CHECK(cublasLtCreate(&h));
    return h;
  }
  static void destroy(Handle h) { cublasLtDestroy(h); }
};

struct TensorDescTraits {
  using Handle = cudnnTensorDescriptor_t;
  static Handle create() {
    Handle h{};
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&h));
    return h;
  }
  static void destroy(Handle h) { cudnnDestroyTensorDescriptor(h); }
};

struct FilterDescTraits {
  using Handle = cudnnFilterDescriptor_t;
  static Handle create() {
    Handle h{};
    CUDNN_CHECK(cudnnCreateFilterDescriptor(&h));
    return h;
  }
  static void destroy(Handle h) { cudnnDestroyFilterDescriptor(h); }
};

struct ConvDescTraits {
  using Handle = cudnnConvolutionDescriptor_t;
  static Handle create() {
    Handle h{};
    CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&h));
    return h;
  }
  static void destroy(Handle h) { cudnnDestroyConvolutionDescriptor(h); }
};

using CudnnHandle = Owned<CudnnHandleTraits>;
using CublasHandle = Owned<CublasHandleTraits>;
using CublasLtHandle = Owned<CublasLtHandleTraits>;
using TensorDesc = Owned<TensorDescTraits>;
using FilterDesc = Owned<FilterDescTraits>;
using ConvDesc = Owned<ConvDescTraits>;

}  // namespace trainer::compute::cuda
