#pragma once
// MbConvOps on the CPU: OpenMP loops over planes and rows with the formulas of
// compute/mbconv_rule.hpp. Sums over many terms (weight gradients, the gate's and
// the mean's rows) accumulate in double in a fixed order, so results do not depend
// on the number of threads.
#include "compute/mbconv_ops.hpp"  // MbConvOps

namespace trainer::compute::cpu {

class CpuMbConvOps final : public MbConvOps {
 public:
  // Every op runs on an OpenMP team of `threads` threads (as CpuBackend's ops).
  explicit CpuMbConvOps(int threads) : threads_(threads) {}

  void depthwise_forward(ConstTensorView x, const float* w, TensorView y, const ConvGeometry& g,
                         Stream& s) override;
  void depthwise_backward_data(ConstTensorView dy, const float* w, TensorView dx, const ConvGeometry& g,
                               Stream& s) override;
  void depthwise_backward_weights(ConstTensorView x, ConstTensorView dy, float* dw, const ConvGeometry& g,
                                  Stream& s) override;
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
  int threads_;
};

}  // namespace trainer::compute::cpu
