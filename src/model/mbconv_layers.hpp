#pragma once
// The layers of torchvision's EfficientNet (models/efficientnet.py) beyond Conv2d and
// BatchNorm2d, over Backend::mbconv_ops(), with torchvision's state_dict names under
// the name each is given:
// - DepthwiseConv2d: Conv2d(C, C, k, stride, (k - 1) / 2, groups=C, bias=False),
//   <name>.weight [C, 1, k, k];
// - ConvNormActivation<Conv>: torchvision's Conv2dNormActivation, the convolution
//   (<name>.0), BatchNorm2d (<name>.1) and SiLU when asked;
// - SqueezeExcitation: torchvision's (ops/misc.py) with SiLU: fc1 and fc2 are 1x1
//   convolutions with bias (<name>.fc1.*, <name>.fc2.*), run as Linear layers over
//   the pooled [N, C] rows.
// Every layer keeps fp32 NCHW activations in every precision (the convolutions round
// their operands in bf16 / fp16 as for the ResNets' fp32 views).
#include <string>  // std::string

#include "compute/backend.hpp"        // compute::ConvGeometry, DeviceBuffer
#include "model/activation.hpp"       // Activation
#include "model/batch_norm.hpp"       // BatchNorm2d
#include "model/conv2d.hpp"           // Conv2d
#include "model/hooks.hpp"            // Context
#include "model/parameter_store.hpp"  // ParameterStore, ParamGroup

namespace trainer::model {

class DepthwiseConv2d {
 public:
  DepthwiseConv2d(ParameterStore& store, const std::string& name, int channels, int kernel, int stride);
  compute::Shape4 output_shape(compute::Shape4 in) const;
  // Keeps a view of x for backward.
  compute::TensorView forward(const Context& ctx, compute::ConstTensorView x);
  // Writes the weight gradient (announced); returns dx unless need_dx is false.
  compute::TensorView backward(const Context& ctx, compute::ConstTensorView dy, bool need_dx);

 private:
  ParameterStore* store_;
  std::size_t weight_;
  compute::ConvGeometry geometry_;
  compute::ConstTensorView x_;
  Activation y_, dx_;
};

// Conv is Conv2d or DepthwiseConv2d.
template <typename Conv>
class ConvNormActivation {
 public:
  template <typename... ConvArgs>
  ConvNormActivation(ParameterStore& store, const std::string& name, int out_channels, bool silu, ConvArgs... args)
      : conv_(store, name + ".0", args...), bn_(store, name + ".1", out_channels, ParamGroup::backbone), silu_(silu) {}

  compute::TensorView forward(const Context& ctx, compute::ConstTensorView x) {
    normalized_ = bn_.forward(ctx, conv_.forward(ctx, x));
    if (!silu_) return normalized_;
    auto y = activated_.ensure(ctx.backend, normalized_.shape);
    ctx.backend.mbconv_ops().silu_forward(normalized_.data, y.data, y.shape.numel(), ctx.stream);
    return y;
  }
  // dy may be overwritten.
  compute::TensorView backward(const Context& ctx, compute::TensorView dy, bool need_dx) {
    if (silu_) ctx.backend.mbconv_ops().silu_backward(normalized_.data, dy.data, dy.data, dy.shape.numel(), ctx.stream);
    return conv_.backward(ctx, bn_.backward(ctx, dy), need_dx);
  }

 private:
  Conv conv_;
  BatchNorm2d bn_;
  bool silu_;
  compute::TensorView normalized_;  // the batch norm's output, the SiLU's input
  Activation activated_;
};

class SqueezeExcitation {
 public:
  SqueezeExcitation(ParameterStore& store, const std::string& name, int channels, int squeeze_channels);
  // x * sigmoid(fc2(silu(fc1(avgpool(x))))); keeps a view of x for backward.
  compute::TensorView forward(const Context& ctx, compute::ConstTensorView x);
  // dy may be overwritten; returns dx (the gate's path plus the pooling's).
  compute::TensorView backward(const Context& ctx, compute::TensorView dy);

 private:
  struct Linear {
    std::size_t weight, bias;
  };
  Linear add_linear(ParameterStore& store, const std::string& name, int in, int out);
  void announce(const Context& ctx, const Linear& l) const;

  ParameterStore* store_;
  int channels_, squeeze_;
  Linear fc1_, fc2_;
  compute::ConstTensorView x_;
  int rows_ = 0;  // images of the last forward
  compute::DeviceBuffer pooled_, hidden_, activated_, logits_;  // [N, C], [N, S], [N, S], [N, C]
  compute::DeviceBuffer dpooled_, dhidden_, dlogits_;
  Activation y_, dx_;
};

}  // namespace trainer::model
