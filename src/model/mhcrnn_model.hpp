#pragma once
// lightning-pose's context model (model_type heatmap_mhcrnn, HeatmapTrackerMHCRNN
// with its HeatmapMHCRNNHead): the backbone ("backbone.*", made by name from
// backbone_registry.hpp) runs on the context frames t-2..t+2 of every row; the
// head has two branches
//   head.head_sf.*  the single-frame heatmap head (HeatmapHead) on frame t,
//   head.head_mf.*  the multi-frame UpsamplingCRNN over all frames,
// each ending in a spatial softmax (temperature 1). Both heatmaps are trained
// against the same targets: forward returns them stacked along the batch,
// multi-frame rows first ([crnn; sf], as lightning-pose concatenates them), so
// one mean heatmap loss over 2B rows is lightning-pose's loss. Predictions take,
// per keypoint, the branch with the higher confidence (select_keypoints).
#include <cstdint>  // std::uint64_t
#include <memory>   // std::unique_ptr
#include <vector>   // std::vector

#include "model/activation.hpp"       // Activation
#include "model/backbone.hpp"         // Backbone
#include "model/heatmap_head.hpp"     // HeatmapHead
#include "model/hooks.hpp"            // Context
#include "model/parameter_store.hpp"  // ParameterStore
#include "model/pose_model.hpp"       // PoseModel, ModelSpec
#include "model/upsampling_crnn.hpp"  // UpsamplingCRNN

namespace trainer::model {

class MhcrnnModel : public PoseModel {
 public:
  static constexpr int kContextFrames = 5;  // t-2 .. t+2
  static constexpr int kCenterFrame = 2;

  // Throws UserError unless downsample_factor is 2 (lightning-pose's restriction).
  MhcrnnModel(compute::Backend& backend, const ModelSpec& spec);

  const ModelSpec& spec() const override { return spec_; }
  ParameterStore& store() override { return store_; }
  const ParameterStore& store() const override { return store_; }
  Backbone& backbone() override { return *backbone_; }
  const Backbone& backbone() const override { return *backbone_; }
  int context_frames() const override { return kContextFrames; }
  int branches() const override { return 2; }

  // images [B * 5, 3, H, W] (row b * 5 + f = frame t-2+f of row b) -> heatmaps
  // [2B, K, H/4, W/4]: rows [0, B) multi-frame, [B, 2B) single-frame.
  compute::TensorView forward(const Context& ctx, compute::ConstTensorView images) override;
  // frames [B + 4, 3, H, W], row b being frames b .. b + 4 (the unlabelled context
  // batch): the backbone over the B + 4 frames, each row's five feature maps then
  // gathered as forward's rows; the same heatmaps.
  compute::TensorView forward_sequence(const Context& ctx, compute::ConstTensorView frames, int rows) override;
  // dheatmaps: [2B, K, h, w], the gradient of the loss with respect to forward's output.
  void backward(const Context& ctx, compute::ConstTensorView dheatmaps, bool train_backbone) override;

  // lightning-pose's predict_step merge: per (row, keypoint) the multi-frame
  // branch wins where its confidence is strictly higher. coords [2B, K, 2] and
  // confidence [2B, K] in forward's row order; writes [B, K, 2] and [B, K].
  static void select_keypoints(int batch, int num_keypoints, const std::vector<float>& coords,
                               const std::vector<float>& confidence, std::vector<float>& out_coords,
                               std::vector<float>& out_confidence);
  void merge_branches(int rows, int num_keypoints, std::vector<float>& coords,
                      std::vector<float>& confidence) const override;

 private:
  ModelSpec spec_;
  ParameterStore store_;
  std::unique_ptr<Backbone> backbone_;
  HeatmapHead head_sf_;
  UpsamplingCRNN head_mf_;
  // forward's heads on the backbone's features [B * 5, C, h, w].
  compute::TensorView heads_forward(const Context& ctx, compute::ConstTensorView features);

  Activation center_, logits_, heatmaps_, dlogits_;
  Activation windows_, dsequence_;  // forward_sequence: the rows' gathered features, the frames' gradient
  int batch_ = 0;
  bool sequence_ = false;  // the last forward was forward_sequence
};

}  // namespace trainer::model
