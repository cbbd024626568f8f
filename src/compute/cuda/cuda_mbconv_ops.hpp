#pragma once
// MbConvOps on CUDA: our kernels (kernels/mbconv.cuh), fp32 NCHW in every precision.
// Every call enqueues on the given stream and never synchronizes.
#include "compute/mbconv_ops.hpp"  // MbConvOps

namespace trainer::compute::cuda {

class CudaMbConvOps final : public MbConvOps {
 public:
  void depthwise_forward(ConstTensorView x, const float* w, TensorView y, const ConvGeometry& g,
                         Stream& s) override;
  void depthwise_backward_data(ConstTensorView dy, const float* w, TensorView dx, const ConvGeometry& g,
                               Stream& s) override;
  void depthwise_backward_weights(ConstTensorView x, ConstTensorView dy, float* dw, const ConvGeometry& g,
                                  Stream& s) override;
  void set_chunked_depthwise_weights(bool on) override { chunked_weights_ = on; }
  void silu_forward(const float* x, float* y, std::size_t count, Stream& s) override;
  void silu_backward(const float* x, const float* dy, float* dx, std::size_t count, Stream& s) override;
  void gate_forward(const float* x, const float* z, float* y, int rows, int width, Stream& s) override;
  void gate_backward(const float* x, const float* z, const float* dy, float* dx, float* dz, int rows, int width,
                     Stream& s) override;
  void row_mean_forward(const float* x, float* out, int rows, int width, Stream& s) override;
  void row_mean_backward_add(const float* dmean, float* dx, int rows, int width, Stream& s) override;
  void scale_rows(const float* x, const float* factors, float* y, int rows, int width, Stream& s) override;
  void stochastic_depth_factors(const float* key, std::uint32_t salt, float p, float* factors, int rows,
                                Stream& s) override;

 private:
  bool chunked_weights_ = true;
};

}  // namespace trainer::compute::cuda
