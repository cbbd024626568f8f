#pragma once
// The heatmap network: a backbone ("backbone.*", made by name from
// backbone_registry.hpp) + heatmap head ("head.*"), ending in a spatial softmax
// (temperature 1) so each heatmap sums to 1.
// Owns the ParameterStore holding every tensor of the model.
#include <memory>  // std::unique_ptr
#include <string>  // std::string

#include "model/activation.hpp"       // Activation
#include "model/backbone.hpp"         // Backbone
#include "model/heatmap_head.hpp"     // HeatmapHead
#include "model/hooks.hpp"            // Context
#include "model/parameter_store.hpp"  // ParameterStore
#include "model/pose_model.hpp"       // PoseModel, ModelSpec

namespace trainer::model {

class HeatmapModel : public PoseModel {
 public:
  // Registers and allocates all tensors; call initialize() or load values next.
  HeatmapModel(compute::Backend& backend, const ModelSpec& spec);

  const ModelSpec& spec() const override { return spec_; }
  ParameterStore& store() override { return store_; }
  const ParameterStore& store() const override { return store_; }
  Backbone& backbone() override { return *backbone_; }
  const Backbone& backbone() const override { return *backbone_; }

  // images [N, 3, H, W] -> heatmaps [N, K, H/2^d, W/2^d], each summing to 1.
  // The returned view stays valid until the next forward.
  compute::TensorView forward(const Context& ctx, compute::ConstTensorView images) override;
  // dheatmaps: gradient of the loss with respect to the forward's output.
  // With train_backbone false only the head's gradients are computed (frozen
  // backbone: its gradients keep their previous values and must not be used).
  void backward(const Context& ctx, compute::ConstTensorView dheatmaps, bool train_backbone) override;

 private:
  ModelSpec spec_;
  ParameterStore store_;
  std::unique_ptr<Backbone> backbone_;
  HeatmapHead head_;
  compute::TensorView logits_;
  Activation heatmaps_, dlogits_;
};

}  // namespace trainer::model
