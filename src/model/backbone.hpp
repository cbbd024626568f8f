#pragma once
// What a heatmap model needs from its feature extractor, so that HeatmapModel and
// MhcrnnModel hold any backbone (ResNet today; lightning-pose also offers
// EfficientNets and ViTs). A backbone is made by make_backbone (backbone_registry.hpp).
// Its contract with the rest of the trainer:
// - It registers every tensor in its constructor under the prefix it is given
//   ("backbone."), with torchvision's state_dict names after it, in ParamGroup::backbone,
//   before the head registers its own: the backbone's gradients form one contiguous
//   range in front of the head's, which is what freezing, --init-weights and the
//   gradient buckets rely on.
// - Frozen (before unfreezing_epoch) its optimizer group has lr 0, as lightning-pose's
//   UnfreezeBackbone keeps it: backward runs as always; nothing else is asked of a
//   backbone for freezing. (A model may still skip its backward, train_backbone false,
//   for callers that need only the head's gradients.)
// - forward and backward follow the layers' conventions: ctx carries the backend,
//   the stream and the hooks; returned views stay valid until the next call.
#include <string>   // std::string
#include <utility>  // std::pair
#include <vector>   // std::vector

#include "compute/backend.hpp"  // compute::TensorView, compute::ConstTensorView
#include "model/hooks.hpp"      // Context

namespace trainer::model {

// The network's input size, for a backbone whose tensors depend on it (vitb_sam's
// position table); {0, 0}: the backbone's own default.
struct ImageSize {
  int height = 0, width = 0;
};

// Throws UserError unless x is [N, 3, H, W] with H and W positive multiples of
// `multiple`; `why` says whose (e.g. "vitt_sam2's stride"), the hint names the keys.
void check_network_input(compute::ConstTensorView x, int multiple, const std::string& why);

class Backbone {
 public:
  virtual ~Backbone() = default;

  // The registry name it was made from, e.g. "resnet50".
  virtual const std::string& name() const = 0;
  // Channels of forward's output; the heads are built for it.
  virtual int out_channels() const = 0;
  // Total downsampling of forward (input H and W must be multiples of it).
  virtual int stride() const = 0;
  // x: [N, 3, H, W] normalized images; returns [N, out_channels(), H/stride, W/stride].
  // Throws UserError for an input it cannot take.
  virtual compute::TensorView forward(const Context& ctx, compute::ConstTensorView x) = 0;
  // dy (the gradient of forward's output) may be overwritten. The gradient with
  // respect to the images is never needed, so none is computed.
  virtual void backward(const Context& ctx, compute::TensorView dy) = 0;

  // Before a training step's forwards, outside any recording of the step: draws the
  // step's train-mode randomness for its `forwards` training forwards (2 in a
  // semi-supervised step: the labelled batch, then the unlabelled frames) and writes
  // it to device memory, where the forwards read it when they run. A training forward
  // no draw was made for runs as in eval mode. Default: no randomness.
  virtual void prepare_training_step(const Context& ctx, const StepKey& key, int forwards) {
    (void)ctx, (void)key, (void)forwards;
  }
  // What the last prepare_training_step drew: (name, one value per forward); for the
  // parity exports (bench step --export).
  virtual std::vector<std::pair<std::string, std::vector<float>>> training_draws() const { return {}; }
};

}  // namespace trainer::model
