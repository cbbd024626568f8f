#pragma once
// TransformerOps on CUDA: matrix products through cuBLAS (cublasGemmStridedBatchedEx,
// fp32 compute; TF32 tensor cores only when the backend allows TF32), the rest as
// our kernels (kernels/transformer.cuh). Every call enqueues on the given stream
// and never synchronizes.
#include <memory>  // std::unique_ptr

#include "compute/cuda/cudnn_raii.hpp"  // CublasHandle
#include "compute/transformer_ops.hpp"  // TransformerOps

namespace trainer::compute::cuda {

class CudaTransformerOps final : public TransformerOps {
 public:
  // The cuBLAS handle is made at the first product, on the device current then
  // (the backend's: it selects its device before any op runs).
  explicit CudaTransformerOps(bool allow_tf32) : allow_tf32_(allow_tf32) {}

  void matmul(const MatmulShape& g, const float* a, const float* b, float* c, Stream& s) override;
  void linear_forward(const float* x, const float* w, const float* bias, float* y, int rows, int in, int out,
                      Stream& s) override;
  void linear_backward(const float* x, const float* w, const float* dy, float* dx, float* dw, float* dbias,
                       int rows, int in, int out, Stream& s) override;
  void layer_norm_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                          float* rstd, int rows, int width, float eps, Stream& s) override;
  void layer_norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd,
                           const float* dy, float* dx, float* dgamma, float* dbeta, int rows, int width,
                           Stream& s) override;
  void gelu_forward(const float* x, float* y, std::size_t count, Stream& s) override;
  void gelu_backward(const float* x, const float* dy, float* dx, std::size_t count, Stream& s) override;
  void softmax_forward(const float* x, float* y, int rows, int cols, Stream& s) override;
  void softmax_backward(const float* y, const float* dy, float* dx, int rows, int cols, Stream& s) override;
  void add_bias(float* x, const float* bias, int rows, int width, Stream& s) override;
  void column_sums(const float* dy, float* dbias, int rows, int width, Stream& s) override;
  void layer_scale_forward(const float* x, const float* gamma, float* y, int rows, int width, Stream& s) override;
  void layer_scale_backward(const float* x, const float* gamma, const float* dy, float* dx, float* dgamma,
                            int rows, int width, Stream& s) override;
  void rotary_forward(float* x, const float* cos, const float* sin, const RotaryShape& r, Stream& s) override;
  void rotary_backward(float* dy, const float* cos, const float* sin, const RotaryShape& r, Stream& s) override;
  void add(const float* a, const float* b, float* y, std::size_t count, Stream& s) override;
  void transpose(const float* in, long long in_ld, long long in_stride, float* out, long long out_stride, int batch,
                 int rows, int cols, Stream& s) override;
  void patchify(const float* images, float* patches, int batch, int channels, int height, int width, int patch,
                Stream& s) override;

 private:
  cublasHandle_t cublas_on(Stream& s);  // the handle, bound to `s`
  bool allow_tf32_;
  std::unique_ptr<CublasHandle> cublas_;
};

}  // namespace trainer::compute::cuda
