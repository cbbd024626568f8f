// BatchNorm2d over the split backend ops, with the sync hook between halves.
#include "model/batch_norm.hpp"


namespace trainer::model {

BatchNorm2d::BatchNorm2d(ParameterStore& store, const std::string& name, int channels,
                         ParamGroup group)
    : store_(&store), channels_(channels) {
  InitRule ones;
  ones.kind = InitRule::ones;
  InitRule zeros;
  weight_ = store.add_parameter(name + ".weight", {channels}, group, ones);
  bias_ = store.add_parameter(name + ".bias", {channels}, group, zeros);
  running_mean_ = store.add_buffer(name + ".running_mean", {channels}, group, zeros);
  running_var_ = store.add_buffer(name + ".running_var", {channels}, group, ones);
  tracked_ = store.add_counter(name + ".num_batches_tracked");
}

void BatchNorm2d::ensure_scratch(compute::Backend& backend) {
  if (mean_.size() == 0) {
    mean_ = compute::DeviceBuffer(backend, channels_);
    invstd_ = compute::DeviceBuffer(backend, channels_);
    sums_ = compute::DeviceBuffer(backend, 2 * std::size_t(channels_));
    moments_ = compute::DeviceBuffer(backend, compute::batchnorm_moments_size(channels_));
  }
}

void BatchNorm2d::statistics(const Context& ctx, compute::ConstTensorView x) {
  ensure_scratch(ctx.backend);
  x_ = x;
  auto& b = ctx.backend;
  if (ctx.training) {
    // Each rank's (mean, M2, count) per channel; with sync BN every rank gathers
    // all of them and merges them in rank order, so all get the same statistics.
    count_ = double(x.shape.n) * x.shape.h * x.shape.w;
    float* running_mean = store_->buffer(running_mean_);
    float* running_var = store_->buffer(running_var_);
    if (ctx.bn_sync == nullptr) {
      b.batchnorm_local_statistics(x, moments_.data(), kEps, kMomentum, mean_.data(), invstd_.data(), running_mean,
                                   running_var, ctx.stream);
    } else {
      b.batchnorm_moments(x, moments_.data(), ctx.stream);
      const int ranks = ctx.bn_sync->ranks();
      const std::size_t block = compute::batchnorm_moments_size(channels_);
      compute::ensure_capacity(b, gathered_, block * std::size_t(ranks));
      ctx.bn_sync->all_gather(moments_.data(), gathered_.data(), block, ctx.stream);
      count_ = ctx.bn_sync->global_count(count_, x.shape.n);
      b.batchnorm_finalize(gathered_.data(), ranks, channels_, kEps, kMomentum, mean_.data(), invstd_.data(),
                           running_mean, running_var, ctx.stream);
    }
    store_->counter(tracked_) += 1;
  } else {
    b.batchnorm_inference_stats(store_->buffer(running_mean_), store_->buffer(running_var_),
                                channels_, kEps, mean_.data(), invstd_.data(), ctx.stream);
  }
}

compute::TensorView BatchNorm2d::forward(const Context& ctx, compute::ConstTensorView x) {
  statistics(ctx, x);
  auto y = y_.ensure(ctx.backend, x.shape, x.storage);
  ctx.backend.batchnorm_apply(x, mean_.data(), invstd_.data(), store_->param(weight_), store_->param(bias_), y,
                              ctx.stream);
  return y;
}

compute::TensorView BatchNorm2d::forward_relu(const Context& ctx, compute::ConstTensorView x,
                                              const float* residual) {
  auto& b = ctx.backend;
  // The separate ops of the path verified on 2026-11-22 (fp32 storage only: 16-bit
  // storage came after the fused ops and has no separate ReLU ops).
  if (!b.fuses_norm_activation() && !compute::is_16bit(x.storage)) {
    auto y = forward(ctx, x);
    if (residual) b.add_relu_forward(y.data, residual, y.data, y.shape.numel(), ctx.stream);
    else b.relu_forward(y.data, y.data, y.shape.numel(), ctx.stream);
    return y;
  }
  statistics(ctx, x);
  auto y = y_.ensure(b, x.shape, x.storage);
  b.batchnorm_apply_relu(x, mean_.data(), invstd_.data(), store_->param(weight_), store_->param(bias_), residual, y,
                         ctx.stream);
  return y;
}

void BatchNorm2d::backward_sums(const Context& ctx, compute::ConstTensorView dy, bool relu) {
  // Parameter gradients come from the local sums (DDP averages them afterwards).
  ctx.backend.batchnorm_backward_reduce_grads(dy, x_, mean_.data(), invstd_.data(), store_->param(weight_),
                                              store_->param(bias_), relu, sums_.data(), store_->grad(weight_),
                                              store_->grad(bias_), ctx.stream);
  announce_gradient(ctx, *store_, bias_);
  announce_gradient(ctx, *store_, weight_);
  if (ctx.bn_sync != nullptr) ctx.bn_sync->all_reduce_sum(sums_.data(), 2 * std::size_t(channels_), ctx.stream);
}

compute::TensorView BatchNorm2d::backward(const Context& ctx, compute::ConstTensorView dy) {
  auto& b = ctx.backend;
  backward_sums(ctx, dy, /*relu=*/false);
  auto dx = dx_.ensure(b, x_.shape, x_.storage);
  b.batchnorm_backward_apply(dy, x_, mean_.data(), invstd_.data(), store_->param(weight_),
                             sums_.data(), count_, dx, ctx.stream);
  return dx;
}

compute::TensorView BatchNorm2d::backward_relu(const Context& ctx, compute::TensorView dy) {
  auto& b = ctx.backend;
  if (!b.fuses_norm_activation() && !compute::is_16bit(x_.storage)) {
    b.relu_backward(y_.view().data, dy.data, dy.data, dy.shape.numel(), ctx.stream);  // y_ holds the ReLU output
    return backward(ctx, dy);
  }
  const float* gamma = store_->param(weight_);
  const float* beta = store_->param(bias_);
  backward_sums(ctx, dy, /*relu=*/true);
  auto dx = dx_.ensure(b, x_.shape, x_.storage);
  b.batchnorm_relu_backward_apply(dy, x_, mean_.data(), invstd_.data(), gamma, beta, sums_.data(), count_, dx,
                                  ctx.stream);
  return dx;
}

}  // namespace trainer::model
