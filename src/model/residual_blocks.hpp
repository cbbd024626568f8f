#pragma once
// torchvision's BasicBlock (ResNet-18/34) and Bottleneck (ResNet-50, stride on the
// 3x3 convolution as torchvision v1.5), with the optional `downsample` shortcut
// (1x1 conv + BN, named downsample.0 / downsample.1).
#include <memory>  // std::unique_ptr
#include <string>  // std::string

#include "model/activation.hpp"       // Activation
#include "model/batch_norm.hpp"       // BatchNorm2d
#include "model/conv2d.hpp"           // Conv2d
#include "model/hooks.hpp"            // Context
#include "model/parameter_store.hpp"  // ParameterStore

namespace trainer::model {

class ResidualBlock {
 public:
  virtual ~ResidualBlock() = default;
  virtual compute::TensorView forward(const Context& ctx, compute::ConstTensorView x) = 0;
  // dy may be overwritten. Returns dx (skipped when need_dx is false).
  virtual compute::TensorView backward(const Context& ctx, compute::TensorView dy, bool need_dx) = 0;
};

// The 1x1 projection shortcut used when the shape changes.
struct Downsample {
  Downsample(ParameterStore& store, const std::string& name, int in, int out, int stride,
             ParamGroup group)
      : conv(store, name + ".0", in, out, 1, stride, 0, group), bn(store, name + ".1", out, group) {}
  Conv2d conv;
  BatchNorm2d bn;
};

class BasicBlock : public ResidualBlock {
 public:
  static constexpr int kExpansion = 1;
  BasicBlock(ParameterStore& store, const std::string& name, int inplanes, int planes, int stride,
             ParamGroup group);
  compute::TensorView forward(const Context& ctx, compute::ConstTensorView x) override;
  compute::TensorView backward(const Context& ctx, compute::TensorView dy, bool need_dx) override;

 private:
  Conv2d conv1_;
  BatchNorm2d bn1_;
  Conv2d conv2_;
  BatchNorm2d bn2_;
  std::unique_ptr<Downsample> downsample_;
  compute::TensorView h1_;  // relu(bn1(conv1(x)))
  compute::ConstTensorView x_;
  compute::TensorView out_;  // relu(bn2(...) + identity), in bn2's output buffer, kept for relu backward
};

class Bottleneck : public ResidualBlock {
 public:
  static constexpr int kExpansion = 4;
  Bottleneck(ParameterStore& store, const std::string& name, int inplanes, int planes, int stride,
             ParamGroup group);
  compute::TensorView forward(const Context& ctx, compute::ConstTensorView x) override;
  compute::TensorView backward(const Context& ctx, compute::TensorView dy, bool need_dx) override;

 private:
  Conv2d conv1_;
  BatchNorm2d bn1_;
  Conv2d conv2_;
  BatchNorm2d bn2_;
  Conv2d conv3_;
  BatchNorm2d bn3_;
  std::unique_ptr<Downsample> downsample_;
  compute::TensorView h1_, h2_;  // relu(bn1(...)), relu(bn2(...))
  compute::ConstTensorView x_;
  compute::TensorView out_;  // relu(bn3(...) + identity), in bn3's output buffer, kept for relu backward
};

}  // namespace trainer::model
