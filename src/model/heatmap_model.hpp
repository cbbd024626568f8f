#pragma once
// The heatmap network: ResNet backbone ("backbone.*") + heatmap head ("head.*"),
// ending in a spatial softmax (temperature 1) so each heatmap sums to 1.
// Owns the ParameterStore holding every tensor of the model.
#include <memory>  // std::unique_ptr
#include <string>  // std::string

#include "model/activation.hpp"       // Activation
#include "model/heatmap_head.hpp"     // HeatmapHead
#include "model/hooks.hpp"            // Context
#include "model/parameter_store.hpp"  // ParameterStore
#include "model/resnet.hpp"           // ResNet

namespace trainer::model {

struct ModelSpec {
  std::string backbone = "resnet50";
  int num_keypoints = 0;
  int downsample_factor = 2;
};

class HeatmapModel {
 public:
  // Registers and allocates all tensors; call initialize() or load values next.
  HeatmapModel(compute::Backend& backend, const ModelSpec& spec);

  const ModelSpec& spec() const { return spec_; }
  ParameterStore& store() { return store_; }
  const ParameterStore& store() const { return store_; }
  void initialize(std::uint64_t seed, compute::Stream& stream) { store_.initialize(seed, stream); }

  // Heatmap size for an input size.
  int heatmap_size(int input_size) const { return input_size >> spec_.downsample_factor; }

  // images [N, 3, H, W] -> heatmaps [N, K, H/2^d, W/2^d], each summing to 1.
  // The returned view stays valid until the next forward.
  compute::TensorView forward(const Context& ctx, compute::ConstTensorView images);
  // dheatmaps: gradient of the loss with respect to the forward's output.
  // With train_backbone false only the head's gradients are computed (frozen
  // backbone: its gradients keep their previous values and must not be used).
  void backward(const Context& ctx, compute::ConstTensorView dheatmaps, bool train_backbone);

 private:
  ModelSpec spec_;
  ParameterStore store_;
  ResNet backbone_;
  HeatmapHead head_;
  compute::TensorView logits_;
  Activation heatmaps_, dlogits_;
};

}  // namespace trainer::model
