#pragma once
// torchvision's EfficientNet-B0/B1/B2 (models/efficientnet.py) cut before avgpool and
// the classifier, as lightning-pose's efficientnet_b0/b1/b2 backbones
// (backbones/factory.py keeps `features`): a 3x3/2 stem, seven stages of MBConv
// blocks, a 1x1 convolution to 1280 (B0, B1) or 1408 (B2) channels; total stride 32.
// Tensors under the prefix with torchvision's names (features.<stage>.<block>.block.<i>...).
// Train mode applies stochastic depth (probability 0.2 x block / blocks, one draw per
// sample and block) from the step's key (prepare_training_step), as torchvision's
// StochasticDepth("row") does with torch's generator.
#include <memory>   // std::unique_ptr
#include <string>   // std::string
#include <utility>  // std::pair
#include <vector>   // std::vector

#include "model/backbone.hpp"         // Backbone
#include "model/mbconv_layers.hpp"    // ConvNormActivation, DepthwiseConv2d, SqueezeExcitation
#include "model/parameter_store.hpp"  // ParameterStore

namespace trainer::model {

// One MBConv block's configuration after the width and depth multipliers.
struct MbConvConfig {
  int expand_ratio = 1, kernel = 3, stride = 1, in_channels = 0, out_channels = 0;
  double drop_probability = 0;  // stochastic depth
};

struct EfficientNetSpec {
  std::string name;
  std::vector<std::vector<MbConvConfig>> stages;  // features.1 .. features.7
  int stem_channels = 32, out_channels = 1280;
};
// Throws UserError for a name that is not efficientnet_b0/b1/b2.
EfficientNetSpec efficientnet_spec(const std::string& name);

class MbConvBlock {
 public:
  MbConvBlock(ParameterStore& store, const std::string& name, const MbConvConfig& c);
  // drop_factors: the block's stochastic depth factors per image (device memory), or
  // null for none (eval mode, or no residual).
  compute::TensorView forward(const Context& ctx, compute::ConstTensorView x, const float* drop_factors);
  // dy may be overwritten. Returns dx (skipped when need_dx is false).
  compute::TensorView backward(const Context& ctx, compute::TensorView dy, bool need_dx);
  bool residual() const { return residual_; }
  double drop_probability() const { return config_.drop_probability; }

 private:
  MbConvConfig config_;
  bool residual_;
  std::unique_ptr<ConvNormActivation<Conv2d>> expand_;  // null when expand_ratio is 1
  ConvNormActivation<DepthwiseConv2d> depthwise_;
  SqueezeExcitation squeeze_;
  ConvNormActivation<Conv2d> project_;
  const float* drop_factors_ = nullptr;  // the last forward's
  Activation dbranch_;                   // the residual branch's gradient (dy scaled or copied)
};

class EfficientNet final : public Backbone {
 public:
  EfficientNet(ParameterStore& store, const EfficientNetSpec& spec, const std::string& prefix);

  static constexpr int kStride = 32;
  const std::string& name() const override { return spec_.name; }
  int out_channels() const override { return spec_.out_channels; }
  int stride() const override { return kStride; }
  compute::TensorView forward(const Context& ctx, compute::ConstTensorView x) override;
  void backward(const Context& ctx, compute::TensorView dy) override;
  // Writes the step's key for the stochastic depth draws of its `forwards` forwards.
  void prepare_training_step(const Context& ctx, const StepKey& key, int forwards) override;
  // Each residual block's factors of the last step, forward after forward
  // ("stochastic_depth/features.<stage>.<block>"), computed on the host with the same
  // rule, for the parity exports.
  std::vector<std::pair<std::string, std::vector<float>>> training_draws() const override;

 private:
  static std::vector<std::string> block_names(const EfficientNetSpec& spec, const std::string& prefix);
  static std::vector<std::unique_ptr<MbConvBlock>> make_blocks(ParameterStore& store, const EfficientNetSpec& spec,
                                                               const std::vector<std::string>& names);

  // Declared (so made, and their tensors registered) in torchvision's order.
  EfficientNetSpec spec_;
  ConvNormActivation<Conv2d> stem_;
  std::vector<std::string> block_names_;  // "<prefix>features.<stage>.<block>"
  std::vector<std::unique_ptr<MbConvBlock>> blocks_;
  ConvNormActivation<Conv2d> head_;
  compute::DeviceBuffer key_, factors_;  // the step's key words; this forward's factors per block
  float key_words_[2] = {0, 0};
  int forwards_prepared_ = 0, forward_in_step_ = 0;
  std::vector<int> forward_batches_;  // images of each training forward of the step (training_draws)
};

// The registry's factory for efficientnet_b0 | efficientnet_b1 | efficientnet_b2.
std::unique_ptr<Backbone> make_efficientnet(ParameterStore& store, const std::string& name, const std::string& prefix,
                                            ImageSize image);

}  // namespace trainer::model
