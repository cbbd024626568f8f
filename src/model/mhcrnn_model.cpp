// The context model (see mhcrnn_model.hpp).
#include "model/mhcrnn_model.hpp"

#include <string>  // std::to_string

#include "model/backbone_registry.hpp"  // make_backbone
#include "util/error.hpp"               // UserError, SystemError

namespace trainer::model {

namespace {
int checked_downsample(int d) {
  if (d != 2)
    throw UserError("model_type heatmap_mhcrnn needs data.downsample_factor 2 (got " + std::to_string(d) + ")",
                    "lightning-pose implements the context model only for downsample_factor 2");
  return d;
}
// lightning-pose's context head takes stride-32 feature maps (the ResNets:
// UpsamplingCRNN upsampling_factor 2) and stride-16 ones (the ViTs: factor 1).
int checked_context_stride(const Backbone& backbone) {
  if (backbone.stride() != 32 && backbone.stride() != 16)
    throw UserError("model_type heatmap_mhcrnn takes a backbone of stride 32 or 16; " + backbone.name() +
                        " has stride " + std::to_string(backbone.stride()),
                    "use model_type heatmap with " + backbone.name());
  return backbone.stride();
}
int crnn_upsampling_factor(const Backbone& backbone) { return checked_context_stride(backbone) == 16 ? 1 : 2; }
}  // namespace

MhcrnnModel::MhcrnnModel(compute::Backend& backend, const ModelSpec& spec)
    : spec_(spec),
      store_(backend),
      backbone_(make_backbone(spec.backbone, store_, "backbone.", spec.image)),
      head_sf_(store_, "head.head_sf.", backbone_->out_channels(), spec.num_keypoints,
               checked_downsample(spec.downsample_factor), checked_context_stride(*backbone_)),
      head_mf_(store_, "head.head_mf.", backbone_->out_channels(), spec.num_keypoints,
               crnn_upsampling_factor(*backbone_)) {
  store_.allocate();
}

compute::TensorView MhcrnnModel::forward(const Context& ctx, compute::ConstTensorView images) {
  if (images.shape.n % kContextFrames != 0)
    throw SystemError("internal error: context model input is not a multiple of 5 frames");
  batch_ = images.shape.n / kContextFrames;
  sequence_ = false;
  return heads_forward(ctx, backbone_->forward(ctx, images));
}

compute::TensorView MhcrnnModel::forward_sequence(const Context& ctx, compute::ConstTensorView frames, int rows) {
  auto& b = ctx.backend;
  if (rows < 1 || frames.shape.n != rows + kContextFrames - 1)
    throw SystemError("internal error: a context sequence of " + std::to_string(frames.shape.n) + " frames for " +
                      std::to_string(rows) + " rows");
  batch_ = rows;
  sequence_ = true;
  const auto features = backbone_->forward(ctx, frames);
  const auto fs = features.shape;
  // Row i's frames i .. i + 4 are consecutive in the sequence: one copy a row.
  auto gathered = windows_.ensure(b, {rows * kContextFrames, fs.c, fs.h, fs.w});
  const std::size_t plane = std::size_t(fs.c) * fs.h * fs.w;
  for (int i = 0; i < rows; ++i)
    b.copy(gathered.data + std::size_t(i) * kContextFrames * plane, features.data + std::size_t(i) * plane,
           kContextFrames * plane, ctx.stream);
  return heads_forward(ctx, gathered);
}

compute::TensorView MhcrnnModel::heads_forward(const Context& ctx, compute::ConstTensorView features) {
  auto& b = ctx.backend;
  const auto fs = features.shape;
  // The single-frame head sees frame t of every row.
  auto center = center_.ensure(b, {batch_, fs.c, fs.h, fs.w});
  const std::size_t plane = std::size_t(fs.c) * fs.h * fs.w;
  for (int i = 0; i < batch_; ++i)
    b.copy(center.data + i * plane, features.data + (std::size_t(i) * kContextFrames + kCenterFrame) * plane, plane,
           ctx.stream);
  auto mf = head_mf_.forward(ctx, features, kContextFrames);
  auto sf = head_sf_.forward(ctx, center);
  if (!(mf.shape == sf.shape)) throw SystemError("internal error: context head branches disagree in shape");
  const auto hs = sf.shape;
  auto logits = logits_.ensure(b, {2 * batch_, hs.c, hs.h, hs.w});
  b.copy(logits.data, mf.data, hs.numel(), ctx.stream);
  b.copy(logits.data + hs.numel(), sf.data, hs.numel(), ctx.stream);
  auto heatmaps = heatmaps_.ensure(b, logits.shape);
  b.spatial_softmax_forward(logits, 1.f, heatmaps, ctx.stream);
  return heatmaps;
}

void MhcrnnModel::backward(const Context& ctx, compute::ConstTensorView dheatmaps, bool train_backbone) {
  auto& b = ctx.backend;
  auto logits = logits_.view();
  auto dlogits = dlogits_.ensure(b, logits.shape);
  b.spatial_softmax_backward(heatmaps_.view(), dheatmaps, 1.f, dlogits, ctx.stream);
  const compute::Shape4 half{batch_, logits.shape.c, logits.shape.h, logits.shape.w};
  // head_mf's parameters come after head_sf's: its gradients are announced first.
  auto dfeatures = head_mf_.backward(ctx, {dlogits.data, half}, train_backbone);
  auto dcenter = head_sf_.backward(ctx, {dlogits.data + half.numel(), half}, train_backbone);
  if (!train_backbone) return;
  const auto fs = dfeatures.shape;
  const std::size_t plane = std::size_t(fs.c) * fs.h * fs.w;
  for (int i = 0; i < batch_; ++i)
    b.accumulate(dcenter.data + i * plane, dfeatures.data + (std::size_t(i) * kContextFrames + kCenterFrame) * plane,
                 plane, ctx.stream);
  if (!sequence_) {
    backbone_->backward(ctx, dfeatures);
    return;
  }
  // A frame's gradient is the sum over the rows that read it (up to five), row by row.
  auto dframes = dsequence_.ensure(b, {batch_ + kContextFrames - 1, fs.c, fs.h, fs.w});
  b.fill(dframes.data, 0.f, dframes.shape.numel(), ctx.stream);
  for (int i = 0; i < batch_; ++i)
    b.accumulate(dfeatures.data + std::size_t(i) * kContextFrames * plane, dframes.data + std::size_t(i) * plane,
                 kContextFrames * plane, ctx.stream);
  backbone_->backward(ctx, dframes);
}

void MhcrnnModel::select_keypoints(int batch, int num_keypoints, const std::vector<float>& coords,
                                   const std::vector<float>& confidence, std::vector<float>& out_coords,
                                   std::vector<float>& out_confidence) {
  const std::size_t n = std::size_t(batch) * num_keypoints;
  if (coords.size() < 4 * n || confidence.size() < 2 * n)
    throw SystemError("internal error: select_keypoints got too few values");
  out_coords.resize(2 * n);
  out_confidence.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const bool crnn = confidence[i] > confidence[n + i];  // torch.gt: ties go to the single frame
    const std::size_t from = crnn ? i : n + i;
    out_coords[2 * i] = coords[2 * from];
    out_coords[2 * i + 1] = coords[2 * from + 1];
    out_confidence[i] = confidence[from];
  }
}

void MhcrnnModel::merge_branches(int rows, int num_keypoints, std::vector<float>& coords,
                                 std::vector<float>& confidence) const {
  std::vector<float> c, k;
  select_keypoints(rows, num_keypoints, coords, confidence, c, k);
  coords.swap(c);
  confidence.swap(k);
}

}  // namespace trainer::model
