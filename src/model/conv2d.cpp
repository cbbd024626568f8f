// Conv2d layer over the compute backend (see conv2d.hpp).
#include "model/conv2d.hpp"

namespace trainer::model {

InitRule conv_filter_init(int out_channels, int in_per_group, int kernel) {
  InitRule init;
  init.kind = InitRule::kaiming_normal_fan_out;
  init.gain = 1.4142135623730951;  // calculate_gain("relu") = sqrt(2)
  init.fan_in = double(in_per_group) * kernel * kernel;
  init.fan_out = double(out_channels) * kernel * kernel;
  return init;
}

Conv2d::Conv2d(ParameterStore& store, const std::string& name, int in_channels, int out_channels,
               int kernel, int stride, int pad, ParamGroup group)
    : store_(&store) {
  geometry_.in_channels = in_channels;
  geometry_.out_channels = out_channels;
  geometry_.kernel = kernel;
  geometry_.stride = stride;
  geometry_.pad = pad;
  weight_ = store.add_parameter(name + ".weight", {out_channels, in_channels, kernel, kernel}, group,
                                conv_filter_init(out_channels, in_channels, kernel));
}

compute::Shape4 Conv2d::output_shape(compute::Shape4 in) const {
  return {in.n, geometry_.out_channels, geometry_.conv_out(in.h), geometry_.conv_out(in.w)};
}

compute::TensorView Conv2d::forward(const Context& ctx, compute::ConstTensorView x) {
  x_ = x;
  auto y = y_.ensure(ctx.backend, output_shape(x.shape), x.storage);  // layers keep their input's storage
  ctx.backend.conv2d_forward(x, store_->param(weight_), y, geometry_, ctx.stream);
  return y;
}

compute::TensorView Conv2d::backward(const Context& ctx, compute::ConstTensorView dy, bool need_dx) {
  compute::TensorView dx;
  if (need_dx) dx = dx_.ensure(ctx.backend, x_.shape, x_.storage);
  ctx.backend.conv2d_backward(x_, dy, store_->param(weight_), store_->grad(weight_), dx, geometry_, ctx.stream);
  announce_gradient(ctx, *store_, weight_);
  return dx;
}

}  // namespace trainer::model
