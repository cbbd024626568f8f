// Heatmap head (see heatmap_head.hpp).
#include "model/heatmap_head.hpp"

#include <iterator>  // std::next

#include "util/error.hpp"  // UserError

namespace trainer::model {

int HeatmapHead::layer_count(int downsample_factor, int input_stride) {
  if (downsample_factor < 1 || downsample_factor > 3)
    throw UserError("data.downsample_factor must be 1, 2 or 3 (got " + std::to_string(downsample_factor) + ")");
  int log2_stride = 0;
  while ((2 << log2_stride) <= input_stride) ++log2_stride;
  if (input_stride < 2 || (1 << log2_stride) != input_stride)
    throw SystemError("internal error: backbone stride " + std::to_string(input_stride) + " is not a power of 2");
  const int n = log2_stride - downsample_factor - 1;  // lightning-pose's n_layers
  if (n < 1)
    throw UserError("data.downsample_factor = " + std::to_string(downsample_factor) +
                        " leaves no upsampling layer after a backbone of stride " + std::to_string(input_stride),
                    "use data.downsample_factor " + std::to_string(log2_stride - 2) +
                        " or lower with this backbone (lightning-pose's head would have none either)");
  return n;
}

HeatmapHead::HeatmapHead(ParameterStore& store, const std::string& prefix, int in_channels,
                         int num_keypoints, int downsample_factor, int input_stride)
    : store_(&store) {
  const int n = layer_count(downsample_factor, input_stride);
  if (num_keypoints < 1) throw UserError("the model needs at least one keypoint");
  layers_.resize(n);
  int in = in_channels / 4;
  for (int i = 0; i < n; ++i) {
    auto& l = layers_[i];
    l.geometry.in_channels = in;
    l.geometry.out_channels = num_keypoints;
    l.geometry.kernel = 3;
    l.geometry.stride = 2;
    l.geometry.pad = 1;
    l.geometry.output_padding = 1;
    InitRule w;
    w.kind = InitRule::xavier_uniform;
    w.gain = 0.01;
    // torch's fan computation for a [in, out, k, k] weight: fan_in = size(1)*k*k.
    w.fan_in = double(num_keypoints) * 9;
    w.fan_out = double(in) * 9;
    const std::string name = prefix + "deconv" + std::to_string(i);
    l.weight = store.add_parameter(name + ".weight", {in, num_keypoints, 3, 3}, ParamGroup::head, w);
    l.bias = store.add_parameter(name + ".bias", {num_keypoints}, ParamGroup::head, InitRule{});
    in = num_keypoints;
  }
}

compute::TensorView HeatmapHead::forward(const Context& ctx, compute::ConstTensorView x) {
  in_shape_ = x.shape;
  auto shuffled = shuffled_.ensure(ctx.backend, {x.shape.n, x.shape.c / 4, x.shape.h * 2, x.shape.w * 2});
  ctx.backend.pixel_shuffle_forward(x, shuffled, 2, ctx.stream);
  compute::ConstTensorView h = shuffled;
  compute::TensorView out = shuffled;
  for (auto& l : layers_) {
    l.x = h;
    out = l.y.ensure(ctx.backend, {h.shape.n, l.geometry.out_channels, l.geometry.deconv_out(h.shape.h),
                                   l.geometry.deconv_out(h.shape.w)});
    ctx.backend.deconv2d_forward(h, store_->param(l.weight), store_->param(l.bias), out, l.geometry,
                                 ctx.stream);
    h = out;
  }
  return out;
}

compute::TensorView HeatmapHead::backward(const Context& ctx, compute::ConstTensorView dy,
                                          bool need_dx) {
  compute::ConstTensorView d = dy;
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) {
    auto& l = *it;
    ctx.backend.deconv2d_backward_weights(l.x, d, store_->grad(l.weight), store_->grad(l.bias),
                                          l.geometry, ctx.stream);
    announce_gradient(ctx, *store_, l.bias);
    announce_gradient(ctx, *store_, l.weight);
    if (!need_dx && std::next(it) == layers_.rend()) return {};
    auto dx = l.dx.ensure(ctx.backend, l.x.shape);
    ctx.backend.deconv2d_backward_data(d, store_->param(l.weight), dx, l.geometry, ctx.stream);
    d = dx;
  }
  auto dfeat = dfeatures_.ensure(ctx.backend, in_shape_);
  ctx.backend.pixel_shuffle_backward(d, dfeat, 2, ctx.stream);
  return dfeat;
}

}  // namespace trainer::model
