// The EfficientNet layers (see mbconv_layers.hpp).
#include "model/mbconv_layers.hpp"

namespace trainer::model {
DepthwiseConv2d::DepthwiseConv2d(ParameterStore& store, const std::string& name, int channels, int kernel, int stride)
    : store_(&store) {
  geometry_.in_channels = geometry_.out_channels = channels;
  geometry_.kernel = kernel;
  geometry_.stride = stride;
  geometry_.pad = (kernel - 1) / 2;
  weight_ = store.add_parameter(name + ".weight", {channels, 1, kernel, kernel}, ParamGroup::backbone,
                                conv_filter_init(channels, 1, kernel));
}

compute::Shape4 DepthwiseConv2d::output_shape(compute::Shape4 in) const {
  return {in.n, in.c, geometry_.conv_out(in.h), geometry_.conv_out(in.w)};
}

compute::TensorView DepthwiseConv2d::forward(const Context& ctx, compute::ConstTensorView x) {
  x_ = x;
  auto y = y_.ensure(ctx.backend, output_shape(x.shape));
  ctx.backend.mbconv_ops().depthwise_forward(x, store_->param(weight_), y, geometry_, ctx.stream);
  return y;
}

compute::TensorView DepthwiseConv2d::backward(const Context& ctx, compute::ConstTensorView dy, bool need_dx) {
  auto& ops = ctx.backend.mbconv_ops();
  ops.depthwise_backward_weights(x_, dy, store_->grad(weight_), geometry_, ctx.stream);
  announce_gradient(ctx, *store_, weight_);
  if (!need_dx) return {};
  auto dx = dx_.ensure(ctx.backend, x_.shape);
  ops.depthwise_backward_data(dy, store_->param(weight_), dx, geometry_, ctx.stream);
  return dx;
}

SqueezeExcitation::SqueezeExcitation(ParameterStore& store, const std::string& name, int channels,
                                     int squeeze_channels)
    : store_(&store), channels_(channels), squeeze_(squeeze_channels) {
  fc1_ = add_linear(store, name + ".fc1", channels, squeeze_channels);
  fc2_ = add_linear(store, name + ".fc2", squeeze_channels, channels);
}

SqueezeExcitation::Linear SqueezeExcitation::add_linear(ParameterStore& store, const std::string& name, int in,
                                                        int out) {
  Linear l;
  l.weight = store.add_parameter(name + ".weight", {out, in, 1, 1}, ParamGroup::backbone, conv_filter_init(out, in, 1));
  l.bias = store.add_parameter(name + ".bias", {out}, ParamGroup::backbone, InitRule{});  // zeros
  return l;
}

void SqueezeExcitation::announce(const Context& ctx, const Linear& l) const {
  announce_gradient(ctx, *store_, l.bias);  // registered after the weight: announced first
  announce_gradient(ctx, *store_, l.weight);
}

compute::TensorView SqueezeExcitation::forward(const Context& ctx, compute::ConstTensorView x) {
  auto& b = ctx.backend;
  auto& ops = b.mbconv_ops();
  auto& linear = b.transformer_ops();
  x_ = x;
  rows_ = x.shape.n;
  const int planes = rows_ * channels_, width = int(x.shape.plane());
  compute::ensure_capacity(b, pooled_, std::size_t(planes));
  compute::ensure_capacity(b, hidden_, std::size_t(rows_) * squeeze_);
  compute::ensure_capacity(b, activated_, std::size_t(rows_) * squeeze_);
  compute::ensure_capacity(b, logits_, std::size_t(planes));
  ops.row_mean_forward(x.data, pooled_.data(), planes, width, ctx.stream);
  linear.linear_forward(pooled_.data(), nullptr, store_->param(fc1_.weight), store_->param(fc1_.bias),
                        hidden_.data(), rows_, channels_, squeeze_, ctx.stream);
  ops.silu_forward(hidden_.data(), activated_.data(), std::size_t(rows_) * squeeze_, ctx.stream);
  linear.linear_forward(activated_.data(), nullptr, store_->param(fc2_.weight), store_->param(fc2_.bias),
                        logits_.data(), rows_, squeeze_, channels_, ctx.stream);
  auto y = y_.ensure(b, x.shape);
  ops.gate_forward(x.data, logits_.data(), y.data, planes, width, ctx.stream);
  return y;
}

compute::TensorView SqueezeExcitation::backward(const Context& ctx, compute::TensorView dy) {
  auto& b = ctx.backend;
  auto& ops = b.mbconv_ops();
  auto& linear = b.transformer_ops();
  const int planes = rows_ * channels_, width = int(x_.shape.plane());
  compute::ensure_capacity(b, dpooled_, std::size_t(planes));
  compute::ensure_capacity(b, dhidden_, std::size_t(rows_) * squeeze_);
  compute::ensure_capacity(b, dlogits_, std::size_t(planes));
  auto dx = dx_.ensure(b, x_.shape);
  ops.gate_backward(x_.data, logits_.data(), dy.data, dx.data, dlogits_.data(), planes, width, ctx.stream);
  linear.linear_backward(activated_.data(), nullptr, store_->param(fc2_.weight), dlogits_.data(), dhidden_.data(),
                         store_->grad(fc2_.weight), store_->grad(fc2_.bias), rows_, squeeze_, channels_, ctx.stream);
  announce(ctx, fc2_);
  ops.silu_backward(hidden_.data(), dhidden_.data(), dhidden_.data(), std::size_t(rows_) * squeeze_, ctx.stream);
  linear.linear_backward(pooled_.data(), nullptr, store_->param(fc1_.weight), dhidden_.data(), dpooled_.data(),
                         store_->grad(fc1_.weight), store_->grad(fc1_.bias), rows_, channels_, squeeze_, ctx.stream);
  announce(ctx, fc1_);
  ops.row_mean_backward_add(dpooled_.data(), dx.data, planes, width, ctx.stream);
  return dx;
}

}  // namespace trainer::model
