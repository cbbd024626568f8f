// The heatmap network (see heatmap_model.hpp).
#include "model/heatmap_model.hpp"

#include "model/backbone_registry.hpp"  // make_backbone
#include "util/error.hpp"               // SystemError

namespace trainer::model {

HeatmapModel::HeatmapModel(compute::Backend& backend, const ModelSpec& spec)
    : spec_(spec),
      store_(backend),
      backbone_(make_backbone(spec.backbone, store_, "backbone.", spec.image)),
      head_(store_, "head.", backbone_->out_channels(), spec.num_keypoints, spec.downsample_factor,
            backbone_->stride()) {
  store_.allocate();
}

compute::TensorView HeatmapModel::forward(const Context& ctx, compute::ConstTensorView images) {
  auto features = backbone_->forward(ctx, images);
  logits_ = head_.forward(ctx, features);
  auto heatmaps = heatmaps_.ensure(ctx.backend, logits_.shape);
  ctx.backend.spatial_softmax_forward(logits_, 1.f, heatmaps, ctx.stream);
  return heatmaps;
}

void HeatmapModel::backward(const Context& ctx, compute::ConstTensorView dheatmaps, bool train_backbone) {
  auto dlogits = dlogits_.ensure(ctx.backend, logits_.shape);
  ctx.backend.spatial_softmax_backward(heatmaps_.view(), dheatmaps, 1.f, dlogits, ctx.stream);
  auto dfeatures = head_.backward(ctx, dlogits, train_backbone);
  if (train_backbone) backbone_->backward(ctx, dfeatures);
}

}  // namespace trainer::model
