// ProfilingBackend: every op forwarded, timed by category (see profiling_backend.hpp).
#include "compute/profiling_backend.hpp"

#include <cmath>  // std::isnan

namespace trainer::compute {

const char* op_category_name(OpCategory c) {
  switch (c) {
    case OpCategory::convolution: return "convolution";
    case OpCategory::normalization: return "normalization";
    case OpCategory::elementwise: return "elementwise";
    case OpCategory::head_loss: return "head, losses";
    case OpCategory::optimizer: return "optimizer";
    case OpCategory::copies: return "copies";
    case OpCategory::matmul: return "ViT matmul";
    case OpCategory::attention: return "ViT attention";
    case OpCategory::count_: break;
  }
  return "?";
}

ProfilingBackend::ProfilingBackend(Backend& inner) : inner_(inner) {
  set_fuses_norm_activation(inner.fuses_norm_activation());
  set_activation_storage(inner.activation_storage());
  set_caches_filters16(inner.caches_filters16());
  set_tiled_batchnorm(inner.tiled_batchnorm());
  set_wide_sum_blocks16(inner.wide_sum_blocks16());
  set_folds_batchnorm_steps(inner.folds_batchnorm_steps());
}

template <typename Op>
void ProfilingBackend::timed(OpCategory category, Stream& s, Op&& op) {
  if (!enabled_) {
    op();
    return;
  }
  Record r{category, s.record_timed(), nullptr};
  op();
  r.end = s.record_timed();
  records_.push_back(std::move(r));
}

OpProfile ProfilingBackend::take_profile() {
  OpProfile out;
  for (const Record& r : records_) {
    r.end->synchronize();
    const double ms = r.end->elapsed_ms_since(*r.start);
    const auto i = std::size_t(r.category);
    if (!std::isnan(ms)) out.ms[i] += ms;
    ++out.calls[i];
  }
  records_.clear();
  out.copy_reads = copy_reads_;
  copy_reads_ = 0;
  return out;
}

#define TRAINER_TIMED(category, call) timed(OpCategory::category, s, [&] { inner_.call; })

// Forwards every ViT op to the inner backend's, timed. Only the inner ops compute, so
// their own autocast setting governs; this object's base state is never read.
class ProfilingBackend::TimedTransformerOps final : public TransformerOps {
 public:
  TimedTransformerOps(ProfilingBackend& owner, TransformerOps& inner) : owner_(owner), inner_(inner) {}
#define TRAINER_TIMED_OP(category, call) owner_.timed(OpCategory::category, s, [&] { inner_.call; })
  void matmul(const MatmulShape& g, const float* a, const float* b, float* c, Stream& s) override {
    TRAINER_TIMED_OP(matmul, matmul(g, a, b, c, s));
  }
  void matmul_with_copies(const MatmulShape& g, const float* a, const std::uint16_t* a16, const float* b,
                          const std::uint16_t* b16, float* c, Stream& s) override {
    count_copy_read(a16 || b16);
    TRAINER_TIMED_OP(matmul, matmul_with_copies(g, a, a16, b, b16, c, s));
  }
  bool activation_copies() const override { return inner_.activation_copies(); }
  void linear_forward(const float* x, const std::uint16_t* x16, const float* w, const float* bias, float* y, int rows,
                      int in, int out, Stream& s) override {
    count_copy_read(x16);
    TRAINER_TIMED_OP(matmul, linear_forward(x, x16, w, bias, y, rows, in, out, s));
  }
  void linear_backward(const float* x, const std::uint16_t* x16, const float* w, const float* dy, float* dx,
                       float* dw, float* dbias, int rows, int in, int out, Stream& s) override {
    count_copy_read(x16);
    TRAINER_TIMED_OP(matmul, linear_backward(x, x16, w, dy, dx, dw, dbias, rows, in, out, s));
  }
  void linears_forward(const float* x, const std::uint16_t* x16, const SharedInputLinear* layers, int count, int rows,
                       int in, Stream& s) override {
    count_copy_read(x16);
    TRAINER_TIMED_OP(matmul, linears_forward(x, x16, layers, count, rows, in, s));
  }
  void linears_backward(const float* x, const std::uint16_t* x16, const SharedInputLinear* layers, int count,
                        float* dx, int rows, int in, Stream& s) override {
    count_copy_read(x16);
    TRAINER_TIMED_OP(matmul, linears_backward(x, x16, layers, count, dx, rows, in, s));
  }
  void layer_norm_forward(const float* x, const float* gamma, const float* beta, float* y, std::uint16_t* y16,
                          float* mean, float* rstd, int rows, int width, float eps, Stream& s) override {
    TRAINER_TIMED_OP(normalization, layer_norm_forward(x, gamma, beta, y, y16, mean, rstd, rows, width, eps, s));
  }
  void layer_norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd, const float* dy,
                           float* dx, float* dgamma, float* dbeta, int rows, int width, Stream& s) override {
    TRAINER_TIMED_OP(normalization, layer_norm_backward(x, gamma, mean, rstd, dy, dx, dgamma, dbeta, rows, width, s));
  }
  void gelu_forward(const float* x, float* y, std::uint16_t* y16, std::size_t count, Stream& s) override {
    TRAINER_TIMED_OP(elementwise, gelu_forward(x, y, y16, count, s));
  }
  void gelu_backward(const float* x, const float* dy, float* dx, std::size_t count, Stream& s) override {
    TRAINER_TIMED_OP(elementwise, gelu_backward(x, dy, dx, count, s));
  }
  void softmax_forward(const float* x, float* y, int rows, int cols, Stream& s) override {
    TRAINER_TIMED_OP(elementwise, softmax_forward(x, y, rows, cols, s));
  }
  void softmax_backward(const float* y, const float* dy, float* dx, int rows, int cols, Stream& s) override {
    TRAINER_TIMED_OP(elementwise, softmax_backward(y, dy, dx, rows, cols, s));
  }
  void add_bias(float* x, const float* bias, int rows, int width, Stream& s) override {
    TRAINER_TIMED_OP(elementwise, add_bias(x, bias, rows, width, s));
  }
  void column_sums(const float* dy, float* dbias, int rows, int width, Stream& s) override {
    TRAINER_TIMED_OP(elementwise, column_sums(dy, dbias, rows, width, s));
  }
  void layer_scale_forward(const float* x, const float* gamma, float* y, int rows, int width, Stream& s) override {
    TRAINER_TIMED_OP(elementwise, layer_scale_forward(x, gamma, y, rows, width, s));
  }
  void layer_scale_backward(const float* x, const float* gamma, const float* dy, float* dx, float* dgamma, int rows,
                            int width, Stream& s) override {
    TRAINER_TIMED_OP(elementwise, layer_scale_backward(x, gamma, dy, dx, dgamma, rows, width, s));
  }
  void rotary_forward(float* x, const float* cos, const float* sin, const RotaryShape& r, Stream& s) override {
    TRAINER_TIMED_OP(elementwise, rotary_forward(x, cos, sin, r, s));
  }
  void rotary_backward(float* dy, const float* cos, const float* sin, const RotaryShape& r, Stream& s) override {
    TRAINER_TIMED_OP(elementwise, rotary_backward(dy, cos, sin, r, s));
  }
  void rotary_tables(const float* scale, const float* inv_freq, float* cos, float* sin, int grid_h, int grid_w,
                     int head_dim, Stream& s) override {
    TRAINER_TIMED_OP(elementwise, rotary_tables(scale, inv_freq, cos, sin, grid_h, grid_w, head_dim, s));
  }
  void add(const float* a, const float* b, float* y, std::size_t count, Stream& s) override {
    TRAINER_TIMED_OP(elementwise, add(a, b, y, count, s));
  }
  void transpose(const float* in, long long in_ld, long long in_stride, float* out, long long out_stride, int batch,
                 int rows, int cols, Stream& s) override {
    TRAINER_TIMED_OP(elementwise, transpose(in, in_ld, in_stride, out, out_stride, batch, rows, cols, s));
  }
  void patchify(const float* images, float* patches, int batch, int channels, int height, int width, int patch,
                Stream& s) override {
    TRAINER_TIMED_OP(elementwise, patchify(images, patches, batch, channels, height, width, patch, s));
  }
  void window_partition(const float* tokens, float* windows, const float* fill, const WindowGrid& g, int width,
                        Stream& s) override {
    TRAINER_TIMED_OP(elementwise, window_partition(tokens, windows, fill, g, width, s));
  }
  void window_unpartition(const float* windows, float* tokens, const WindowGrid& g, int width, Stream& s) override {
    TRAINER_TIMED_OP(elementwise, window_unpartition(windows, tokens, g, width, s));
  }
  void conv_patches(const float* images, float* patches, const ConvPatchGrid& g, Stream& s) override {
    TRAINER_TIMED_OP(elementwise, conv_patches(images, patches, g, s));
  }
  void max_pool_forward(const float* x, float* y, const TokenPoolGrid& g, int width, Stream& s) override {
    TRAINER_TIMED_OP(elementwise, max_pool_forward(x, y, g, width, s));
  }
  void max_pool_backward(const float* x, const float* dy, float* dx, const TokenPoolGrid& g, int width,
                         Stream& s) override {
    TRAINER_TIMED_OP(elementwise, max_pool_backward(x, dy, dx, g, width, s));
  }
  void attention_forward(const float* q, const float* k, const float* v, float* probs, float* out,
                         const AttentionShape& a, Stream& s) override {
    if (owner_.enabled_) owner_.attention_calls_.push_back(a);
    TRAINER_TIMED_OP(attention, attention_forward(q, k, v, probs, out, a, s));
  }
  void attention_backward(const float* q, const float* k, const float* v, const float* probs, const float* out,
                          const float* dout, float* dq, float* dk, float* dv, float* scratch, const AttentionShape& a,
                          Stream& s) override {
    TRAINER_TIMED_OP(attention, attention_backward(q, k, v, probs, out, dout, dq, dk, dv, scratch, a, s));
  }
  std::string fused_attention_note() const override { return inner_.fused_attention_note(); }
  std::size_t attention_state_count(const AttentionShape& a) override { return inner_.attention_state_count(a); }
  const std::uint16_t* attention_output16(const float* state, const AttentionShape& a) override {
    return inner_.attention_output16(state, a);
  }
#undef TRAINER_TIMED_OP

 private:
  void count_copy_read(bool read) {
    if (read && owner_.enabled_) ++owner_.copy_reads_;
  }
  ProfilingBackend& owner_;
  TransformerOps& inner_;
};

// Forwards every MBConv op to the inner backend's, timed.
class ProfilingBackend::TimedMbConvOps final : public MbConvOps {
 public:
  TimedMbConvOps(ProfilingBackend& owner, MbConvOps& inner) : owner_(owner), inner_(inner) {}
#define TRAINER_TIMED_OP(category, call) owner_.timed(OpCategory::category, s, [&] { inner_.call; })
  void depthwise_forward(ConstTensorView x, const float* w, TensorView y, const ConvGeometry& g, Stream& s) override {
    TRAINER_TIMED_OP(convolution, depthwise_forward(x, w, y, g, s));
  }
  void depthwise_backward_data(ConstTensorView dy, const float* w, TensorView dx, const ConvGeometry& g,
                               Stream& s) override {
    TRAINER_TIMED_OP(convolution, depthwise_backward_data(dy, w, dx, g, s));
  }
  void depthwise_backward_weights(ConstTensorView x, ConstTensorView dy, float* dw, const ConvGeometry& g,
                                  Stream& s) override {
    TRAINER_TIMED_OP(convolution, depthwise_backward_weights(x, dy, dw, g, s));
  }
  void set_chunked_depthwise_weights(bool on) override { inner_.set_chunked_depthwise_weights(on); }
  void silu_forward(const float* x, float* y, std::size_t count, Stream& s) override {
    TRAINER_TIMED_OP(elementwise, silu_forward(x, y, count, s));
  }
  void silu_backward(const float* x, const float* dy, float* dx, std::size_t count, Stream& s) override {
    TRAINER_TIMED_OP(elementwise, silu_backward(x, dy, dx, count, s));
  }
  void gate_forward(const float* x, const float* z, float* y, int rows, int width, Stream& s) override {
    TRAINER_TIMED_OP(elementwise, gate_forward(x, z, y, rows, width, s));
  }
  void gate_backward(const float* x, const float* z, const float* dy, float* dx, float* dz, int rows, int width,
                     Stream& s) override {
    TRAINER_TIMED_OP(elementwise, gate_backward(x, z, dy, dx, dz, rows, width, s));
  }
  void row_mean_forward(const float* x, float* out, int rows, int width, Stream& s) override {
    TRAINER_TIMED_OP(elementwise, row_mean_forward(x, out, rows, width, s));
  }
  void row_mean_backward_add(const float* dmean, float* dx, int rows, int width, Stream& s) override {
    TRAINER_TIMED_OP(elementwise, row_mean_backward_add(dmean, dx, rows, width, s));
  }
  void scale_rows(const float* x, const float* factors, float* y, int rows, int width, Stream& s) override {
    TRAINER_TIMED_OP(elementwise, scale_rows(x, factors, y, rows, width, s));
  }
  void stochastic_depth_factors(const float* key, std::uint32_t salt, float p, float* factors, int rows,
                                Stream& s) override {
    TRAINER_TIMED_OP(elementwise, stochastic_depth_factors(key, salt, p, factors, rows, s));
  }
#undef TRAINER_TIMED_OP

 private:
  ProfilingBackend& owner_;
  MbConvOps& inner_;
};

ProfilingBackend::~ProfilingBackend() = default;

TransformerOps& ProfilingBackend::transformer_ops() {
  if (!transformer_ops_) transformer_ops_ = std::make_unique<TimedTransformerOps>(*this, inner_.transformer_ops());
  return *transformer_ops_;
}

MbConvOps& ProfilingBackend::mbconv_ops() {
  if (!mbconv_ops_) mbconv_ops_ = std::make_unique<TimedMbConvOps>(*this, inner_.mbconv_ops());
  return *mbconv_ops_;
}

void ProfilingBackend::upload(float* dst, const float* host_src, std::size_t count, Stream& s) {
  TRAINER_TIMED(copies, upload(dst, host_src, count, s));
}
void ProfilingBackend::download(float* host_dst, const float* src, std::size_t count, Stream& s) {
  TRAINER_TIMED(copies, download(host_dst, src, count, s));
}
void ProfilingBackend::copy(float* dst, const float* src, std::size_t count, Stream& s) {
  TRAINER_TIMED(copies, copy(dst, src, count, s));
}
void ProfilingBackend::fill(float* dst, float value, std::size_t count, Stream& s) {
  TRAINER_TIMED(elementwise, fill(dst, value, count, s));
}

void ProfilingBackend::set_values(float* dst, const float* values, std::size_t count, Stream& s) {
  TRAINER_TIMED(copies, set_values(dst, values, count, s));
}
void ProfilingBackend::scale(float* x, float alpha, std::size_t count, Stream& s) {
  TRAINER_TIMED(elementwise, scale(x, alpha, count, s));
}
void ProfilingBackend::conv2d_forward(ConstTensorView x, const float* w, TensorView y, const ConvGeometry& g,
                                      Stream& s) {
  if (enabled_) conv_calls_.push_back(ConvCall{false, x.shape, y.shape, g});
  TRAINER_TIMED(convolution, conv2d_forward(x, w, y, g, s));
}
void ProfilingBackend::conv2d_backward_data(ConstTensorView dy, const float* w, TensorView dx,
                                            const ConvGeometry& g, Stream& s) {
  TRAINER_TIMED(convolution, conv2d_backward_data(dy, w, dx, g, s));
}
void ProfilingBackend::conv2d_backward_weights(ConstTensorView x, ConstTensorView dy, float* dw,
                                               const ConvGeometry& g, Stream& s) {
  TRAINER_TIMED(convolution, conv2d_backward_weights(x, dy, dw, g, s));
}
void ProfilingBackend::conv2d_backward(ConstTensorView x, ConstTensorView dy, const float* w, float* dw,
                                       TensorView dx, const ConvGeometry& g, Stream& s) {
  TRAINER_TIMED(convolution, conv2d_backward(x, dy, w, dw, dx, g, s));
}
void ProfilingBackend::deconv2d_forward(ConstTensorView x, const float* w, const float* bias, TensorView y,
                                        const ConvGeometry& g, Stream& s) {
  if (enabled_) conv_calls_.push_back(ConvCall{true, x.shape, y.shape, g});
  TRAINER_TIMED(convolution, deconv2d_forward(x, w, bias, y, g, s));
}
void ProfilingBackend::deconv2d_backward_data(ConstTensorView dy, const float* w, TensorView dx,
                                              const ConvGeometry& g, Stream& s) {
  TRAINER_TIMED(convolution, deconv2d_backward_data(dy, w, dx, g, s));
}
void ProfilingBackend::deconv2d_backward_weights(ConstTensorView x, ConstTensorView dy, float* dw, float* dbias,
                                                 const ConvGeometry& g, Stream& s) {
  TRAINER_TIMED(convolution, deconv2d_backward_weights(x, dy, dw, dbias, g, s));
}
void ProfilingBackend::batchnorm_stats(ConstTensorView x, float* stats, Stream& s) {
  TRAINER_TIMED(normalization, batchnorm_stats(x, stats, s));
}
void ProfilingBackend::batchnorm_moments(ConstTensorView x, float* moments, Stream& s) {
  TRAINER_TIMED(normalization, batchnorm_moments(x, moments, s));
}
void ProfilingBackend::batchnorm_local_statistics(ConstTensorView x, float* moments, float eps, float momentum,
                                                  float* mean, float* invstd, float* running_mean, float* running_var,
                                                  Stream& s) {
  TRAINER_TIMED(normalization,
                batchnorm_local_statistics(x, moments, eps, momentum, mean, invstd, running_mean, running_var, s));
}
void ProfilingBackend::batchnorm_backward_reduce_grads(ConstTensorView dy, ConstTensorView x, const float* mean,
                                                       const float* invstd, const float* gamma, const float* beta,
                                                       bool relu, float* reduce, float* dgamma, float* dbeta,
                                                       Stream& s) {
  TRAINER_TIMED(normalization,
                batchnorm_backward_reduce_grads(dy, x, mean, invstd, gamma, beta, relu, reduce, dgamma, dbeta, s));
}
void ProfilingBackend::batchnorm_finalize(const float* moments, int ranks, int channels, float eps, float momentum,
                                          float* mean, float* invstd, float* running_mean, float* running_var,
                                          Stream& s) {
  TRAINER_TIMED(normalization,
                batchnorm_finalize(moments, ranks, channels, eps, momentum, mean, invstd, running_mean, running_var, s));
}
void ProfilingBackend::batchnorm_inference_stats(const float* running_mean, const float* running_var, int channels,
                                                 float eps, float* mean, float* invstd, Stream& s) {
  TRAINER_TIMED(normalization, batchnorm_inference_stats(running_mean, running_var, channels, eps, mean, invstd, s));
}
void ProfilingBackend::batchnorm_apply(ConstTensorView x, const float* mean, const float* invstd,
                                       const float* gamma, const float* beta, TensorView y, Stream& s) {
  TRAINER_TIMED(normalization, batchnorm_apply(x, mean, invstd, gamma, beta, y, s));
}
void ProfilingBackend::batchnorm_backward_reduce(ConstTensorView dy, ConstTensorView x, const float* mean,
                                                 float* reduce, Stream& s) {
  TRAINER_TIMED(normalization, batchnorm_backward_reduce(dy, x, mean, reduce, s));
}
void ProfilingBackend::batchnorm_param_grads(const float* reduce, const float* invstd, int channels, float* dgamma,
                                             float* dbeta, Stream& s) {
  TRAINER_TIMED(normalization, batchnorm_param_grads(reduce, invstd, channels, dgamma, dbeta, s));
}
void ProfilingBackend::batchnorm_backward_apply(ConstTensorView dy, ConstTensorView x, const float* mean,
                                                const float* invstd, const float* gamma, const float* reduce,
                                                double count, TensorView dx, Stream& s) {
  TRAINER_TIMED(normalization, batchnorm_backward_apply(dy, x, mean, invstd, gamma, reduce, count, dx, s));
}
void ProfilingBackend::batchnorm_apply_relu(ConstTensorView x, const float* mean, const float* invstd,
                                            const float* gamma, const float* beta, const float* residual,
                                            TensorView y, Stream& s) {
  TRAINER_TIMED(normalization, batchnorm_apply_relu(x, mean, invstd, gamma, beta, residual, y, s));
}
void ProfilingBackend::batchnorm_relu_backward_reduce(ConstTensorView dy, ConstTensorView x, const float* mean,
                                                      const float* invstd, const float* gamma, const float* beta,
                                                      float* reduce, Stream& s) {
  TRAINER_TIMED(normalization, batchnorm_relu_backward_reduce(dy, x, mean, invstd, gamma, beta, reduce, s));
}
void ProfilingBackend::batchnorm_relu_backward_apply(ConstTensorView dy, ConstTensorView x, const float* mean,
                                                     const float* invstd, const float* gamma, const float* beta,
                                                     const float* reduce, double count, TensorView dx, Stream& s) {
  TRAINER_TIMED(normalization,
                batchnorm_relu_backward_apply(dy, x, mean, invstd, gamma, beta, reduce, count, dx, s));
}
void ProfilingBackend::maxpool2d_forward(ConstTensorView x, TensorView y, const PoolGeometry& g, Stream& s) {
  TRAINER_TIMED(elementwise, maxpool2d_forward(x, y, g, s));
}
void ProfilingBackend::maxpool2d_backward(ConstTensorView x, ConstTensorView dy, TensorView dx,
                                          const PoolGeometry& g, Stream& s) {
  TRAINER_TIMED(elementwise, maxpool2d_backward(x, dy, dx, g, s));
}
void ProfilingBackend::relu_forward(const float* x, float* y, std::size_t count, Stream& s) {
  TRAINER_TIMED(elementwise, relu_forward(x, y, count, s));
}
void ProfilingBackend::relu_backward(const float* y, const float* dy, float* dx, std::size_t count, Stream& s) {
  TRAINER_TIMED(elementwise, relu_backward(y, dy, dx, count, s));
}
void ProfilingBackend::add_relu_forward(const float* a, const float* b, float* y, std::size_t count, Stream& s) {
  TRAINER_TIMED(elementwise, add_relu_forward(a, b, y, count, s));
}
void ProfilingBackend::accumulate(const float* x, float* out, std::size_t count, Stream& s) {
  TRAINER_TIMED(elementwise, accumulate(x, out, count, s));
}
void ProfilingBackend::convert_storage(ConstTensorView src, TensorView dst, Stream& s) {
  TRAINER_TIMED(copies, convert_storage(src, dst, s));
}
void ProfilingBackend::accumulate_tensor(ConstTensorView x, TensorView out, Stream& s) {
  TRAINER_TIMED(elementwise, accumulate_tensor(x, out, s));
}
void ProfilingBackend::relu_backward_tensor(ConstTensorView y, ConstTensorView dy, TensorView dx, Stream& s) {
  TRAINER_TIMED(elementwise, relu_backward_tensor(y, dy, dx, s));
}
void ProfilingBackend::affine_points(float* xy, std::size_t points, const float* map, Stream& s) {
  TRAINER_TIMED(elementwise, affine_points(xy, points, map, s));
}
void ProfilingBackend::pixel_shuffle_forward(ConstTensorView x, TensorView y, int factor, Stream& s) {
  TRAINER_TIMED(elementwise, pixel_shuffle_forward(x, y, factor, s));
}
void ProfilingBackend::pixel_shuffle_backward(ConstTensorView dy, TensorView dx, int factor, Stream& s) {
  TRAINER_TIMED(elementwise, pixel_shuffle_backward(dy, dx, factor, s));
}
void ProfilingBackend::normalize_images(const std::uint8_t* src, int in_channels, TensorView dst,
                                        const float mean[3], const float std[3], Stream& s) {
  TRAINER_TIMED(head_loss, normalize_images(src, in_channels, dst, mean, std, s));
}
void ProfilingBackend::heatmap_targets(const float* keypoints, TensorView targets, float sigma, float* mask,
                                       Stream& s) {
  TRAINER_TIMED(head_loss, heatmap_targets(keypoints, targets, sigma, mask, s));
}
void ProfilingBackend::spatial_softmax_forward(ConstTensorView x, float temperature, TensorView y, Stream& s) {
  TRAINER_TIMED(head_loss, spatial_softmax_forward(x, temperature, y, s));
}
void ProfilingBackend::spatial_softmax_backward(ConstTensorView y, ConstTensorView dy, float temperature,
                                                TensorView dx, Stream& s) {
  TRAINER_TIMED(head_loss, spatial_softmax_backward(y, dy, temperature, dx, s));
}
void ProfilingBackend::heatmap_loss(ConstTensorView pred, ConstTensorView target, const float* mask,
                                    const HeatmapLoss& type, float* loss, float* dpred, float loss_scale,
                                    Stream& s) {
  TRAINER_TIMED(head_loss, heatmap_loss(pred, target, mask, type, loss, dpred, loss_scale, s));
}
void ProfilingBackend::soft_argmax(ConstTensorView heatmaps, int downsample_factor, float temperature,
                                   float* coords, float* confidence, Stream& s) {
  TRAINER_TIMED(head_loss, soft_argmax(heatmaps, downsample_factor, temperature, coords, confidence, s));
}
void ProfilingBackend::soft_argmax_backward(ConstTensorView heatmaps, int downsample_factor, float temperature,
                                            const float* dcoords, TensorView dheatmaps, Stream& s) {
  TRAINER_TIMED(head_loss, soft_argmax_backward(heatmaps, downsample_factor, temperature, dcoords, dheatmaps, s));
}
void ProfilingBackend::cache_filters16(const Filter* filters, std::size_t count, Stream& s) {
  TRAINER_TIMED(convolution, cache_filters16(filters, count, s));
}
void ProfilingBackend::adam_update(float* params, const float* grads, float* m, float* v, std::size_t count,
                                   const AdamParams& p, Stream& s) {
  TRAINER_TIMED(optimizer, adam_update(params, grads, m, v, count, p, s));
}
void ProfilingBackend::count_adam_step(float* step, float* factors, const float* lr, const AdamParams& p,
                                       Stream& s) {
  TRAINER_TIMED(optimizer, count_adam_step(step, factors, lr, p, s));
}
void ProfilingBackend::unscale_and_check(float* grads, std::size_t count, const float* inv_scale, float* found_inf,
                                         Stream& s) {
  TRAINER_TIMED(optimizer, unscale_and_check(grads, count, inv_scale, found_inf, s));
}
void ProfilingBackend::update_loss_scale(float* state, const LossScaleRule& rule, Stream& s) {
  TRAINER_TIMED(optimizer, update_loss_scale(state, rule, s));
}
void ProfilingBackend::scale_by(float* x, std::size_t count, const float* factor, Stream& s) {
  TRAINER_TIMED(elementwise, scale_by(x, count, factor, s));
}
void ProfilingBackend::temporal_loss(const float* keypoints, const float* confidence, int frames, int num_keypoints,
                                     const float* epsilon, float prob_threshold, float scale_x, float scale_y,
                                     float* loss, float* dkeypoints, float grad_scale, Stream& s) {
  TRAINER_TIMED(head_loss, temporal_loss(keypoints, confidence, frames, num_keypoints, epsilon, prob_threshold,
                                         scale_x, scale_y, loss, dkeypoints, grad_scale, s));
}
void ProfilingBackend::pca_loss(const float* keypoints, int frames, int num_keypoints, const PcaLossTables& tables,
                                float scale_x, float scale_y, float* loss, float* dkeypoints, float grad_scale,
                                Stream& s) {
  TRAINER_TIMED(head_loss,
                pca_loss(keypoints, frames, num_keypoints, tables, scale_x, scale_y, loss, dkeypoints, grad_scale, s));
}

#undef TRAINER_TIMED

}  // namespace trainer::compute
