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

// In-place ReLU on a BN output.
void relu_inplace(const Context& ctx, compute::TensorView t) {
  ctx.backend.relu_forward(t.data, t.data, t.shape.numel(), ctx.stream);
}
void relu_backward_inplace(const Context& ctx, compute::ConstTensorView y, compute::TensorView dy) {
  ctx.backend.relu_backward(y.data, dy.data, dy.data, dy.shape.numel(), ctx.stream);
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

compute::TensorView BasicBlock::forward(const Context& ctx, compute::ConstTensorView x) {
  x_ = x;
  h1_ = bn1_.forward(ctx, conv1_.forward(ctx, x));
  relu_inplace(ctx, h1_);
  auto b2 = bn2_.forward(ctx, conv2_.forward(ctx, h1_));
  compute::ConstTensorView identity = x;
  if (downsample_) identity = downsample_->bn.forward(ctx, downsample_->conv.forward(ctx, x));
  auto out = out_.ensure(ctx.backend, b2.shape);
  ctx.backend.add_relu_forward(b2.data, identity.data, out.data, out.shape.numel(), ctx.stream);
  return out;
}

compute::TensorView BasicBlock::backward(const Context& ctx, compute::TensorView dy, bool need_dx) {
  relu_backward_inplace(ctx, out_.view(), dy);  // dy is now d(b2 + identity)
  auto dshort = shortcut_backward(ctx, downsample_.get(), dy, need_dx);
  auto d = bn2_.backward(ctx, dy);
  d = conv2_.backward(ctx, d, true);
  relu_backward_inplace(ctx, h1_, d);
  d = bn1_.backward(ctx, d);
  auto dx = conv1_.backward(ctx, d, need_dx);
  if (need_dx) ctx.backend.accumulate(dshort.data, dx.data, dx.shape.numel(), ctx.stream);
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
  h1_ = bn1_.forward(ctx, conv1_.forward(ctx, x));
  relu_inplace(ctx, h1_);
  h2_ = bn2_.forward(ctx, conv2_.forward(ctx, h1_));
  relu_inplace(ctx, h2_);
  auto b3 = bn3_.forward(ctx, conv3_.forward(ctx, h2_));
  compute::ConstTensorView identity = x;
  if (downsample_) identity = downsample_->bn.forward(ctx, downsample_->conv.forward(ctx, x));
  auto out = out_.ensure(ctx.backend, b3.shape);
  ctx.backend.add_relu_forward(b3.data, identity.data, out.data, out.shape.numel(), ctx.stream);
  return out;
}

compute::TensorView Bottleneck::backward(const Context& ctx, compute::TensorView dy, bool need_dx) {
  relu_backward_inplace(ctx, out_.view(), dy);
  auto dshort = shortcut_backward(ctx, downsample_.get(), dy, need_dx);
  auto d = bn3_.backward(ctx, dy);
  d = conv3_.backward(ctx, d, true);
  relu_backward_inplace(ctx, h2_, d);
  d = bn2_.backward(ctx, d);
  d = conv2_.backward(ctx, d, true);
  relu_backward_inplace(ctx, h1_, d);
  d = bn1_.backward(ctx, d);
  auto dx = conv1_.backward(ctx, d, need_dx);
  if (need_dx) ctx.backend.accumulate(dshort.data, dx.data, dx.shape.numel(), ctx.stream);
  return dx;
}

}  // namespace trainer::model
