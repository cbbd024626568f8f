#pragma once
// torchvision's ResNet-18/34/50 cut before avgpool/fc: conv1 7x7/2, bn1, relu,
// maxpool 3x3/2, layer1..layer4; total stride 32. Parameters are registered as
// torchvision's state_dict keys under a prefix (the model uses "backbone.").
// The first Backbone; backbone_registry.cpp lists its three names.
#include <memory>  // std::unique_ptr
#include <string>  // std::string
#include <vector>  // std::vector

#include "model/activation.hpp"       // Activation
#include "model/backbone.hpp"         // Backbone
#include "model/batch_norm.hpp"       // BatchNorm2d
#include "model/conv2d.hpp"           // Conv2d
#include "model/hooks.hpp"            // Context
#include "model/parameter_store.hpp"  // ParameterStore
#include "model/residual_blocks.hpp"  // ResidualBlock

namespace trainer::model {

struct ResNetSpec {
  std::string name;          // resnet18 | resnet34 | resnet50
  bool bottleneck = false;
  int blocks[4] = {2, 2, 2, 2};
  int out_channels() const { return 512 * (bottleneck ? 4 : 1); }
};
// Throws UserError for an unknown name.
ResNetSpec resnet_spec(const std::string& name);

class ResNet final : public Backbone {
 public:
  ResNet(ParameterStore& store, const ResNetSpec& spec, const std::string& prefix);

  static constexpr int kStride = 32;
  const std::string& name() const override { return spec_.name; }
  int out_channels() const override { return spec_.out_channels(); }
  int stride() const override { return kStride; }
  // x: [N, 3, H, W] normalized images; returns [N, C, H/32, W/32].
  compute::TensorView forward(const Context& ctx, compute::ConstTensorView x) override;
  // dy may be overwritten. The input gradient is never needed (images).
  void backward(const Context& ctx, compute::TensorView dy) override;
  // Every convolution filter (after the store's allocate()), as forward lists them for
  // Backend::cache_filters16 in a 16-bit precision.
  const std::vector<compute::Backend::Filter>& convolution_filters();

 private:
  ResNetSpec spec_;
  Conv2d conv1_;
  BatchNorm2d bn1_;
  compute::PoolGeometry pool_;
  std::vector<std::unique_ptr<ResidualBlock>> blocks_;
  compute::TensorView stem_;  // relu(bn1(conv1(x)))
  Activation pooled_, dpool_;
  // 16-bit activation storage only: the images converted into it, the features
  // converted back to fp32 for the head, and the head's gradient converted into it.
  Activation input16_, features32_, dfeatures16_;
  // The convolution filters (every 4-D parameter among this network's, which are
  // [first_param_, end_param_) of the store), listed for Backend::cache_filters16 at
  // the start of each forward in a 16-bit precision.
  ParameterStore* store_ = nullptr;
  std::size_t first_param_ = 0, end_param_ = 0;
  std::vector<compute::Backend::Filter> filters_;
};

// The registry's factory for resnet18 | resnet34 | resnet50.
std::unique_ptr<Backbone> make_resnet(ParameterStore& store, const std::string& name, const std::string& prefix,
                                      ImageSize image);

}  // namespace trainer::model
