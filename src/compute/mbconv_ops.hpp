#pragma once
// The ops of the EfficientNets' MBConv blocks (torchvision's efficientnet_b0/b1/b2,
// which lightning-pose's efficientnet_* backbones are) that the ResNets do not need,
// reached through Backend::mbconv_ops(). One implementation per device: the CPU
// (plain loops over OpenMP, src/compute/cpu/cpu_mbconv_ops.*) and CUDA
// (kernels/mbconv.cu, src/compute/cuda/cuda_mbconv_ops.*).
//
// Conventions (as Backend's): float32 NCHW in memory, element counts, every op takes
// its Stream and overwrites its outputs unless its comment says ADDED. These ops are
// fp32 in every precision (as batch norm is); the MBConv's 1x1 and stem convolutions
// go through Backend::conv2d_* and the squeeze-excitation's two 1x1 convolutions
// through TransformerOps::linear_* (Linear layers over [N, C] rows), which round as
// torch.autocast does. Semantics follow PyTorch: docs/COMPUTE.md, "MBConv ops".
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint32_t

#include "compute/stream.hpp"  // Stream
#include "compute/tensor.hpp"  // TensorView, ConstTensorView

namespace trainer::compute {

struct ConvGeometry;  // compute/backend.hpp

class MbConvOps {
 public:
  virtual ~MbConvOps() = default;

  // Depthwise Conv2d without bias (groups = in_channels = out_channels = C): x
  // [N, C, H, W], w [C, 1, k, k] (PyTorch's layout), y [N, C, g.conv_out(H),
  // g.conv_out(W)], zero padding g.pad. fp32 NCHW views only.
  virtual void depthwise_forward(ConstTensorView x, const float* w, TensorView y, const ConvGeometry& g,
                                 Stream& s) = 0;
  virtual void depthwise_backward_data(ConstTensorView dy, const float* w, TensorView dx, const ConvGeometry& g,
                                       Stream& s) = 0;
  virtual void depthwise_backward_weights(ConstTensorView x, ConstTensorView dy, float* dw, const ConvGeometry& g,
                                          Stream& s) = 0;
  // GPUs: the weight gradient in chunks of the batch's rows, every tap at once (true,
  // the default since 2026-11-29), or one block per (channel, tap) (false: the layout
  // before, TRAINER_DEPTHWISE_CHUNKS=0). The same sums in double, added in another
  // order. Neither has run on a GPU yet. The CPU ignores it.
  virtual void set_chunked_depthwise_weights(bool /*on*/) {}

  // nn.SiLU: y = x * sigmoid(x) (y may be x). The backward from the input x:
  // dx = dy * s * (1 + x * (1 - s)), s = sigmoid(x) (dx may be dy).
  virtual void silu_forward(const float* x, float* y, std::size_t count, Stream& s) = 0;
  virtual void silu_backward(const float* x, const float* dy, float* dx, std::size_t count, Stream& s) = 0;

  // Squeeze-excitation's scaling of x [rows, width] (rows = N*C, width = H*W) by the
  // sigmoid of its gate logits z [rows]: y = x * sigmoid(z[row]) (y may be x).
  virtual void gate_forward(const float* x, const float* z, float* y, int rows, int width, Stream& s) = 0;
  // dx = dy * sigmoid(z[row]) and dz[row] = (sum over the row of dy * x) * s * (1 - s),
  // s = sigmoid(z[row]). dx must not alias dy or x.
  virtual void gate_backward(const float* x, const float* z, const float* dy, float* dx, float* dz, int rows,
                             int width, Stream& s) = 0;

  // AdaptiveAvgPool2d(1) over [rows, width]: out[row] = the mean of x's row. Its
  // backward ADDS dmean[row] / width to every element of dx's row.
  virtual void row_mean_forward(const float* x, float* out, int rows, int width, Stream& s) = 0;
  virtual void row_mean_backward_add(const float* dmean, float* dx, int rows, int width, Stream& s) = 0;

  // y[row, j] = x[row, j] * factors[row] (y may be x), the factors read from device
  // memory when the work runs: torchvision's StochasticDepth ("row" mode: one factor
  // per sample, 0 or 1 / (1 - p)), forward and backward alike.
  virtual void scale_rows(const float* x, const float* factors, float* y, int rows, int width, Stream& s) = 0;
  // Those factors for `rows` samples: factors[row] = compute::stochastic_depth_factor(
  // key[0], key[1], salt, row, p) (compute/mbconv_rule.hpp), the key's two words read
  // from device memory when the work runs (a replayed step draws with each step's key).
  virtual void stochastic_depth_factors(const float* key, std::uint32_t salt, float p, float* factors, int rows,
                                        Stream& s) = 0;
};

}  // namespace trainer::compute
