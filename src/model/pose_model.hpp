#pragma once
// What the training step needs from a network, so that one StepRunner drives
// both model types: `heatmap` (HeatmapModel) and `heatmap_mhcrnn` (MhcrnnModel).
// A row of a batch carries context_frames() images (1, or 5 for the context
// model) and yields branches() heatmap sets, stacked along the batch
// ([branch 0 rows; branch 1 rows; ...]), all trained against the same targets.
#include <cstdint>  // std::uint64_t
#include <string>   // std::string
#include <utility>  // std::move
#include <vector>   // std::vector

#include "compute/backend.hpp"        // compute::TensorView
#include "model/backbone.hpp"         // Backbone
#include "model/hooks.hpp"            // Context
#include "model/parameter_store.hpp"  // ParameterStore
#include "util/error.hpp"              // SystemError

namespace trainer::model {

struct ModelSpec {
  ModelSpec() = default;
  ModelSpec(std::string backbone_name, int keypoints, int downsample, ImageSize image_size = {})
      : backbone(std::move(backbone_name)), num_keypoints(keypoints), downsample_factor(downsample),
        image(image_size) {}

  std::string backbone = "resnet50";  // one of backbone_names() (backbone_registry.hpp)
  int num_keypoints = 0;
  int downsample_factor = 2;
  // The input images' size: vitb_sam's position table is made for it ({0, 0}: its
  // checkpoint's 1024 x 1024); the other backbones take any size.
  ImageSize image;
};

class PoseModel {
 public:
  virtual ~PoseModel() = default;

  virtual const ModelSpec& spec() const = 0;
  virtual ParameterStore& store() = 0;
  virtual const ParameterStore& store() const = 0;
  virtual Backbone& backbone() = 0;
  virtual const Backbone& backbone() const = 0;
  void initialize(std::uint64_t seed, compute::Stream& stream) { store().initialize(seed, stream); }
  // Heatmap size for an input size.
  int heatmap_size(int input_size) const { return input_size >> spec().downsample_factor; }

  virtual int context_frames() const { return 1; }
  virtual int branches() const { return 1; }
  // images [rows * context_frames(), 3, H, W] -> heatmaps [rows * branches(), K, h, w],
  // each summing to 1; valid until the next forward.
  virtual compute::TensorView forward(const Context& ctx, compute::ConstTensorView images) = 0;
  // The context model on one sequence of consecutive frames [rows + context_frames() - 1,
  // 3, H, W], row i being frames i .. i + context_frames() - 1: the backbone runs once a
  // frame (its batch norms see each frame once), then forward's heads. backward() then
  // sums each frame's gradient over the rows that use it. Other models have no context.
  virtual compute::TensorView forward_sequence(const Context& ctx, compute::ConstTensorView frames, int rows) {
    (void)ctx, (void)frames, (void)rows;
    throw SystemError("internal error: only the context model (heatmap_mhcrnn) takes a frame sequence");
  }
  // With train_backbone false only the head's gradients are computed.
  virtual void backward(const Context& ctx, compute::ConstTensorView dheatmaps, bool train_backbone) = 0;
  // The network's own train-mode randomness, drawn before each training step (see
  // Backbone::prepare_training_step; only the backbones have any).
  void prepare_training_step(const Context& ctx, const StepKey& key, int forwards) {
    backbone().prepare_training_step(ctx, key, forwards);
  }
  // Turns per-branch keypoints (coords [rows * branches(), K, 2], confidence
  // [rows * branches(), K], host) into one prediction per row, in place.
  virtual void merge_branches(int rows, int num_keypoints, std::vector<float>& coords,
                              std::vector<float>& confidence) const {
    (void)rows, (void)num_keypoints, (void)coords, (void)confidence;
  }
};

}  // namespace trainer::model
