// Residual blocks: forward in torchvision's order; backward walks the shortcut
// first so gradients become final in exactly reverse registration order (the
// shortcut's parameters are registered last), which the gradient buckets rely on.
#include "model/residual_blocks.hpp"

namespace trainer::model {

namespace {
std::unique_ptr<Downsample> make_downsample(ParameterStore& store, const std::string& name,
                                            int inplanes, int outplanes, int stride,
                                            ParamGroup group) {
  if (stride == 1 && inplanes == outplanes) return nullptr;
  return std::make_unique<Downsample>(store, name + ".downsample", inplanes, outplanes, stride,
                                      group);
}

// The residual join's ReLU backward, in place: dy becomes d(bn + identity), which
// both the last batch norm and the shortcut take.
void relu_backward_inplace(const Context& ctx, compute::ConstTensorView y, compute::TensorView dy) {
  ctx.backend.relu_backward_tensor(y, dy, dy, ctx.stream);
}

// Runs the shortcut backward; returns its dx (or dy itself for the identity).
compute::ConstTensorView shortcut_backward(const Context& ctx, Downsample* ds,
                                           compute::TensorView dy, bool need_dx) {
  if (ds == nullptr) return dy;
  auto d = ds->bn.backward(ctx, dy);
  return ds->conv.backward(ctx, d, need_dx);
}
}  // namespace

BasicBlock::BasicBlock(ParameterStore& store, const std::string& name, int inplanes, int planes,
                       int stride, ParamGroup group)
    : conv1_(store, name + ".conv1", inplanes, planes, 3, stride, 1, group),
      bn1_(store, name + ".bn1", planes, group),
      conv2_(store, name + ".conv2", planes, planes, 3, 1, 1, group),
      bn2_(store, name + ".bn2", planes, group),
      downsample_(make_downsample(store, name, inplanes, planes * kExpansion, stride, group)) {}

// The shortcut runs before the last convolution so that the last batch norm can add
// it in its fused pass; the shortcut's layers are independent of the main branch, so
// the order changes no number.
compute::TensorView BasicBlock::forward(const Context& ctx, compute::ConstTensorView x) {
  x_ = x;
  h1_ = bn1_.forward_relu(ctx, conv1_.forward(ctx, x));
  compute::ConstTensorView identity = x;
  if (downsample_) identity = downsample_->bn.forward(ctx, downsample_->conv.forward(ctx, x));
  out_ = bn2_.forward_relu(ctx, conv2_.forward(ctx, h1_), identity.data);
  return out_;
}

compute::TensorView BasicBlock::backward(const Context& ctx, compute::TensorView dy, bool need_dx) {
  relu_backward_inplace(ctx, out_, dy);  // dy is now d(b2 + identity)
  auto dshort = shortcut_backward(ctx, downsample_.get(), dy, need_dx);
  auto d = bn2_.backward(ctx, dy);
  d = conv2_.backward(ctx, d, true);
  d = bn1_.backward_relu(ctx, d);
  auto dx = conv1_.backward(ctx, d, need_dx);
  if (need_dx) ctx.backend.accumulate_tensor(dshort, dx, ctx.stream);
  return dx;
}

Bottleneck::Bottleneck(ParameterStore& store, const std::string& name, int inplanes, int planes,
                       int stride, ParamGroup group)
    : conv1_(store, name + ".conv1", inplanes, planes, 1, 1, 0, group),
      bn1_(store, name + ".bn1", planes, group),
      conv2_(store, name + ".conv2", planes, planes, 3, stride, 1, group),
      bn2_(store, name + ".bn2", planes, group),
      conv3_(store, name + ".conv3", planes, planes * kExpansion, 1, 1, 0, group),
      bn3_(store, name + ".bn3", planes * kExpansion, group),
      downsample_(make_downsample(store, name, inplanes, planes * kExpansion, stride, group)) {}

compute::TensorView Bottleneck::forward(const Context& ctx, compute::ConstTensorView x) {
  x_ = x;
  h1_ = bn1_.forward_relu(ctx, conv1_.forward(ctx, x));
  h2_ = bn2_.forward_relu(ctx, conv2_.forward(ctx, h1_));
  compute::ConstTensorView identity = x;
  if (downsample_) identity = downsample_->bn.forward(ctx, downsample_->conv.forward(ctx, x));
  out_ = bn3_.forward_relu(ctx, conv3_.forward(ctx, h2_), identity.data);
  return out_;
}

compute::TensorView Bottleneck::backward(const Context& ctx, compute::TensorView dy, bool need_dx) {
  relu_backward_inplace(ctx, out_, dy);
  auto dshort = shortcut_backward(ctx, downsample_.get(), dy, need_dx);
  auto d = bn3_.backward(ctx, dy);
  d = conv3_.backward(ctx, d, true);
  d = bn2_.backward_relu(ctx, d);
  d = conv2_.backward(ctx, d, true);
  d = bn1_.backward_relu(ctx, d);
  auto dx = conv1_.backward(ctx, d, need_dx);
  if (need_dx) ctx.backend.accumulate_tensor(dshort, dx, ctx.stream);
  return dx;
}

}  // namespace trainer::model
