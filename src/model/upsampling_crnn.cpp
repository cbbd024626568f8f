// lightning-pose's UpsamplingCRNN (see upsampling_crnn.hpp).
#include "model/upsampling_crnn.hpp"

#include <utility>  // std::swap

#include "util/error.hpp"  // UserError, SystemError

namespace trainer::model {

namespace {
InitRule xavier(double fan_in, double fan_out) {
  InitRule r;
  r.kind = InitRule::xavier_uniform;
  r.gain = 1.0;
  r.fan_in = fan_in;  // torch: size(1) * k * k, also for transposed weights
  r.fan_out = fan_out;
  return r;
}
}  // namespace

UpsamplingCRNN::UpsamplingCRNN(ParameterStore& store, const std::string& prefix, int in_channels,
                               int num_keypoints, int upsampling_factor)
    : store_(&store), in_channels_(in_channels), keypoints_(num_keypoints), factor_(upsampling_factor) {
  if (in_channels % 4 != 0) throw UserError("the context head needs backbone channels divisible by 4");
  if (num_keypoints < 1) throw UserError("the model needs at least one keypoint");
  if (factor_ != 1 && factor_ != 2) throw SystemError("internal error: UpsamplingCRNN factor must be 1 or 2");
  if (factor_ == 2) pre_ = make_deconv(prefix + "W_pre", in_channels / 4, num_keypoints);
  const int rnn_inputs = factor_ == 2 ? num_keypoints : in_channels / 4;  // x_t's channels
  register_direction(fwd_, prefix + "W_f", prefix + "H_f", rnn_inputs);
  register_direction(bwd_, prefix + "W_b", prefix + "H_b", rnn_inputs);
  auto& backend = store.backend();
  const std::size_t hidden = std::size_t(kFiltersPerKeypoint) * num_keypoints;
  const std::size_t dense = hidden * num_keypoints * 4;
  for (Direction* d : {&fwd_, &bwd_}) {
    d->h0_dense = compute::DeviceBuffer(backend, dense);  // zero off the diagonal blocks, for good
    d->h1_dense = compute::DeviceBuffer(backend, dense);
    d->h0_dense_grad = compute::DeviceBuffer(backend, dense);
    d->h1_dense_grad = compute::DeviceBuffer(backend, dense);
  }
  tmp_dense_ = compute::DeviceBuffer(backend, dense);
  tmp_w_ = compute::DeviceBuffer(backend, std::size_t(rnn_inputs) * num_keypoints * 9);  // W_f's / W_b's size
  tmp_b_ = compute::DeviceBuffer(backend, hidden);
  bias_sums_ = compute::DeviceBuffer(backend, 2 * hidden);
  zeros_ = compute::DeviceBuffer(backend, hidden);
  ones_ = compute::DeviceBuffer(backend, hidden);
  backend.fill(ones_.data(), 1.f, hidden, backend.default_stream());
  backend.default_stream().synchronize();
}

UpsamplingCRNN::Deconv UpsamplingCRNN::make_deconv(const std::string& name, int in, int out) {
  Deconv l;
  l.g.in_channels = in;
  l.g.out_channels = out;
  l.g.kernel = 3;
  l.g.stride = 2;
  l.g.pad = 1;
  l.g.output_padding = 1;
  l.weight = store_->add_parameter(name + ".weight", {in, out, 3, 3}, ParamGroup::head, xavier(out * 9.0, in * 9.0));
  l.bias = store_->add_parameter(name + ".bias", {out}, ParamGroup::head, InitRule{});
  return l;
}

void UpsamplingCRNN::register_direction(Direction& d, const std::string& w_name, const std::string& h_name,
                                        int inputs) {
  const int k = keypoints_, hidden = kFiltersPerKeypoint * keypoints_;
  d.w = make_deconv(w_name, inputs, k);
  // Grouped weights: conv OIHW [16K, K/groups = 1, 2, 2]; transposed IOHW [16K, K/groups = 1, 2, 2].
  d.h0_weight = store_->add_parameter(h_name + ".0.weight", {hidden, 1, 2, 2}, ParamGroup::head, xavier(4, hidden * 4.0));
  d.h0_bias = store_->add_parameter(h_name + ".0.bias", {hidden}, ParamGroup::head, InitRule{});
  d.h1_weight = store_->add_parameter(h_name + ".1.weight", {hidden, 1, 2, 2}, ParamGroup::head, xavier(4, hidden * 4.0));
  d.h1_bias = store_->add_parameter(h_name + ".1.bias", {k}, ParamGroup::head, InitRule{});
}

// Dense stand-in for both hidden layers: conv K -> 16K (k2 s2); its transpose is
// the ConvTranspose2d 16K -> K with the same geometry read the other way.
compute::ConvGeometry UpsamplingCRNN::hidden_geometry() const {
  compute::ConvGeometry g;
  g.in_channels = keypoints_;
  g.out_channels = kFiltersPerKeypoint * keypoints_;
  g.kernel = 2;
  g.stride = 2;
  return g;
}

namespace {
compute::ConvGeometry transposed(compute::ConvGeometry g) {
  std::swap(g.in_channels, g.out_channels);
  return g;
}
}  // namespace

// Row r of the grouped weight (4 floats) belongs to group r / 16: it goes to
// dense[r, r / 16, :, :].
void UpsamplingCRNN::expand(const Context& ctx, const float* grouped, float* dense) {
  const int rows = kFiltersPerKeypoint * keypoints_;
  for (int r = 0; r < rows; ++r)
    ctx.backend.copy(dense + (std::size_t(r) * keypoints_ + r / kFiltersPerKeypoint) * 4, grouped + std::size_t(r) * 4,
                     4, ctx.stream);
}

void UpsamplingCRNN::extract_diagonal(const Context& ctx, const float* dense, float* grouped) {
  const int rows = kFiltersPerKeypoint * keypoints_;
  for (int r = 0; r < rows; ++r)
    ctx.backend.copy(grouped + std::size_t(r) * 4, dense + (std::size_t(r) * keypoints_ + r / kFiltersPerKeypoint) * 4,
                     4, ctx.stream);
}

void UpsamplingCRNN::accumulate(const Context& ctx, const float* x, float* out, std::size_t count) {
  ctx.backend.accumulate(x, out, count, ctx.stream);
}

void UpsamplingCRNN::forward_direction(const Context& ctx, Direction& d, bool reverse) {
  auto& b = ctx.backend;
  const auto conv = hidden_geometry();
  const auto deconv = transposed(conv);
  d.s.resize(frames_);
  d.z_raw.resize(frames_);
  d.z.resize(frames_);
  for (int t = 0; t < frames_; ++t) {
    auto& x = x_[reverse ? frames_ - 1 - t : t];
    const auto xs = x.shape();
    auto s = d.s[t].ensure(b, {xs.n, keypoints_, d.w.g.deconv_out(xs.h), d.w.g.deconv_out(xs.w)});
    b.deconv2d_forward(x.view(), store_->param(d.w.weight), store_->param(d.w.bias), s,
                       d.w.g, ctx.stream);
    if (t == 0) continue;
    auto prev = d.s[t - 1].view();
    const compute::Shape4 zs{xs.n, conv.out_channels, conv.conv_out(prev.shape.h), conv.conv_out(prev.shape.w)};
    auto z_raw = d.z_raw[t].ensure(b, zs);
    b.conv2d_forward(prev, d.h0_dense.data(), z_raw, conv, ctx.stream);
    auto z = d.z[t].ensure(b, zs);
    b.batchnorm_apply(z_raw, zeros_.data(), ones_.data(), ones_.data(), store_->param(d.h0_bias), z, ctx.stream);
    auto u = tmp_k_.ensure(b, s.shape);
    b.deconv2d_forward(z, d.h1_dense.data(), store_->param(d.h1_bias), u, deconv, ctx.stream);
    accumulate(ctx, u.data, s.data, s.shape.numel());
  }
}

compute::TensorView UpsamplingCRNN::forward(const Context& ctx, compute::ConstTensorView features, int frames) {
  auto& b = ctx.backend;
  const auto fs = features.shape;
  if (frames < 1 || fs.n % frames != 0 || fs.c != in_channels_)
    throw SystemError("internal error: UpsamplingCRNN got features of unexpected shape");
  frames_ = frames;
  batch_ = fs.n / frames;
  feature_shape_ = fs;
  auto shuffled = shuffled_.ensure(b, {fs.n, fs.c / 4, fs.h * 2, fs.w * 2});
  b.pixel_shuffle_forward(features, shuffled, 2, ctx.stream);
  compute::TensorView pre = shuffled;  // the recurrence's inputs, all frames (factor 1: the shuffled features)
  if (factor_ == 2) {
    pre = pre_out_.ensure(b, {fs.n, keypoints_, pre_.g.deconv_out(shuffled.shape.h), pre_.g.deconv_out(shuffled.shape.w)});
    b.deconv2d_forward(shuffled, store_->param(pre_.weight), store_->param(pre_.bias), pre, pre_.g, ctx.stream);
  }
  // Sample-major rows (b * F + f) -> one [B, c, h, w] tensor per frame.
  const std::size_t plane = std::size_t(pre.shape.c) * pre.shape.h * pre.shape.w;
  x_.resize(frames_);
  for (int f = 0; f < frames_; ++f) {
    auto x = x_[f].ensure(b, {batch_, pre.shape.c, pre.shape.h, pre.shape.w});
    for (int i = 0; i < batch_; ++i)
      b.copy(x.data + i * plane, pre.data + (std::size_t(i) * frames_ + f) * plane, plane, ctx.stream);
  }
  for (Direction* d : {&fwd_, &bwd_}) {
    expand(ctx, store_->param(d->h0_weight), d->h0_dense.data());
    expand(ctx, store_->param(d->h1_weight), d->h1_dense.data());
  }
  forward_direction(ctx, fwd_, false);
  forward_direction(ctx, bwd_, true);
  auto last_f = fwd_.s[frames_ - 1].view();
  auto logits = logits_.ensure(b, last_f.shape);
  b.copy(logits.data, last_f.data, logits.shape.numel(), ctx.stream);
  accumulate(ctx, bwd_.s[frames_ - 1].view().data, logits.data, logits.shape.numel());
  b.scale(logits.data, 0.5f, logits.shape.numel(), ctx.stream);
  return logits;
}

// Adds this transposed convolution's weight and bias gradients for (x, dy) to
// the store and its input gradient to dx_accumulator.
void UpsamplingCRNN::deconv_backward_accumulate(const Context& ctx, const Deconv& l, compute::ConstTensorView x,
                                                compute::ConstTensorView dy, float* dx_accumulator) {
  auto& b = ctx.backend;
  b.deconv2d_backward_weights(x, dy, tmp_w_.data(), tmp_b_.data(), l.g, ctx.stream);
  accumulate(ctx, tmp_w_.data(), store_->grad(l.weight), store_->parameters()[l.weight].count);
  accumulate(ctx, tmp_b_.data(), store_->grad(l.bias), store_->parameters()[l.bias].count);
  auto dx = tmp_x_.ensure(b, x.shape);
  b.deconv2d_backward_data(dy, store_->param(l.weight), dx, l.g, ctx.stream);
  accumulate(ctx, dx.data, dx_accumulator, dx.shape.numel());
}

// Backpropagation through time, last step first.
void UpsamplingCRNN::backward_direction(const Context& ctx, Direction& d, bool reverse) {
  auto& b = ctx.backend;
  const auto conv = hidden_geometry();
  const auto deconv = transposed(conv);
  const auto& params = store_->parameters();
  for (std::size_t i : {d.w.weight, d.w.bias, d.h0_bias, d.h1_bias})
    b.fill(store_->grad(i), 0.f, params[i].count, ctx.stream);
  const std::size_t dense = tmp_dense_.size();
  b.fill(d.h0_dense_grad.data(), 0.f, dense, ctx.stream);
  b.fill(d.h1_dense_grad.data(), 0.f, dense, ctx.stream);

  compute::ConstTensorView ds = dhalf_.view();
  for (int t = frames_ - 1; t >= 0; --t) {
    const int frame = reverse ? frames_ - 1 - t : t;
    deconv_backward_accumulate(ctx, d.w, x_[frame].view(), ds, dx_[frame].view().data);
    if (t == 0) break;
    auto z = d.z[t].view();
    b.deconv2d_backward_weights(z, ds, tmp_dense_.data(), tmp_b_.data(), deconv, ctx.stream);
    accumulate(ctx, tmp_dense_.data(), d.h1_dense_grad.data(), dense);
    accumulate(ctx, tmp_b_.data(), store_->grad(d.h1_bias), params[d.h1_bias].count);
    auto dz = dz_.ensure(b, z.shape);
    b.deconv2d_backward_data(ds, d.h1_dense.data(), dz, deconv, ctx.stream);
    b.batchnorm_stats(dz, bias_sums_.data(), ctx.stream);  // [0, C): sum of dz = bias gradient
    accumulate(ctx, bias_sums_.data(), store_->grad(d.h0_bias), params[d.h0_bias].count);
    auto prev = d.s[t - 1].view();
    b.conv2d_backward_weights(prev, dz, tmp_dense_.data(), conv, ctx.stream);
    accumulate(ctx, tmp_dense_.data(), d.h0_dense_grad.data(), dense);
    auto next = (ds.data == ds_a_.view().data ? ds_b_ : ds_a_).ensure(b, prev.shape);
    b.conv2d_backward_data(dz, d.h0_dense.data(), next, conv, ctx.stream);
    ds = next;
  }
  extract_diagonal(ctx, d.h0_dense_grad.data(), store_->grad(d.h0_weight));
  extract_diagonal(ctx, d.h1_dense_grad.data(), store_->grad(d.h1_weight));
  // Registration order is W, H.0, H.1 (weight before bias): announce in reverse.
  for (std::size_t i : {d.h1_bias, d.h1_weight, d.h0_bias, d.h0_weight, d.w.bias, d.w.weight})
    announce_gradient(ctx, *store_, i);
}

compute::TensorView UpsamplingCRNN::backward(const Context& ctx, compute::ConstTensorView dlogits, bool need_dx) {
  auto& b = ctx.backend;
  auto half = dhalf_.ensure(b, dlogits.shape);
  b.copy(half.data, dlogits.data, half.shape.numel(), ctx.stream);
  b.scale(half.data, 0.5f, half.shape.numel(), ctx.stream);
  dx_.resize(frames_);
  for (int f = 0; f < frames_; ++f) {
    auto dx = dx_[f].ensure(b, x_[f].shape());
    b.fill(dx.data, 0.f, dx.shape.numel(), ctx.stream);
  }
  backward_direction(ctx, bwd_, true);  // registered last: its gradients are announced first
  backward_direction(ctx, fwd_, false);

  // The frames' gradients back into sample-major rows: dW_pre's input (factor 2) or
  // the shuffled features' gradient itself (factor 1).
  auto shuffled = shuffled_.view();
  const compute::Shape4 pre_shape = factor_ == 2 ? pre_out_.shape() : shuffled.shape;
  if (factor_ == 1 && !need_dx) return {};
  auto dpre = (factor_ == 2 ? dpre_ : dshuffled_).ensure(b, pre_shape);
  const std::size_t plane = std::size_t(pre_shape.c) * pre_shape.h * pre_shape.w;
  for (int f = 0; f < frames_; ++f)
    for (int i = 0; i < batch_; ++i)
      b.copy(dpre.data + (std::size_t(i) * frames_ + f) * plane, dx_[f].view().data + i * plane, plane, ctx.stream);
  compute::TensorView dshuffled = dpre;
  if (factor_ == 2) {
    b.deconv2d_backward_weights(shuffled, dpre, store_->grad(pre_.weight), store_->grad(pre_.bias), pre_.g, ctx.stream);
    announce_gradient(ctx, *store_, pre_.bias);
    announce_gradient(ctx, *store_, pre_.weight);
    if (!need_dx) return {};
    dshuffled = dshuffled_.ensure(b, shuffled.shape);
    b.deconv2d_backward_data(dpre, store_->param(pre_.weight), dshuffled, pre_.g, ctx.stream);
  }
  auto dfeatures = dfeatures_.ensure(b, feature_shape_);
  b.pixel_shuffle_backward(dshuffled, dfeatures, 2, ctx.stream);
  return dfeatures;
}

}  // namespace trainer::model
