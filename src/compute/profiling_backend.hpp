#pragma once
// A Backend that runs every op on another backend and, while enabled, times it with
// timed events on the op's stream, by category: where one training step's device
// time goes (`trainer bench step --profile`) on machines where Nsight Compute is
// missing or not allowed. On a GPU the times are the device's, between events
// around each op; on the CPU, host time (ops run synchronously there).
//
// Wrap the backend before building the model and the step on it: every call must
// come through this object. Recording two events per op slows the step a little;
// disable it (the default) for the timed images/s.
#include <array>    // std::array
#include <memory>   // std::unique_ptr
#include <string>   // std::string
#include <vector>   // std::vector

#include "compute/backend.hpp"  // Backend

namespace trainer::compute {

enum class OpCategory {
  convolution,    // conv2d_*, deconv2d_*, the EfficientNets' depthwise convolutions
  normalization,  // batchnorm_*
  elementwise,    // ReLU, residual add, pooling, pixel shuffle, accumulate, fill, scale, affine points;
                  // the ViTs' GELU, softmax, bias adds, layer scale, RoPE, adds, transposes, patches;
                  // the EfficientNets' SiLU, gates, means and stochastic depth
  head_loss,      // input normalization, heatmap targets, softmax, losses, soft-argmax, keypoint losses
  optimizer,      // Adam, loss-scale unscale
  copies,         // upload, download, copy
  matmul,         // the ViTs' matrix products (TransformerOps::matmul, linear_*)
  attention,      // the ViTs' attention, forward and backward
  count_
};
inline constexpr std::size_t kOpCategories = std::size_t(OpCategory::count_);
const char* op_category_name(OpCategory c);

// A convolution the wrapped backend ran while enabled: a forward conv2d or deconv2d
// with its shapes (each backward op repeats its forward's problem). What the
// deviceless cuDNN plan test enumerates, from the real model rather than a list.
struct ConvCall {
  bool transposed = false;  // deconv2d_forward
  Shape4 x, y;
  ConvGeometry geometry;
};

struct OpProfile {
  std::array<double, kOpCategories> ms{};  // device (GPU) or host (CPU) milliseconds per category
  std::array<long, kOpCategories> calls{};  // backend calls per category
  // ViT product calls (a Linear, the query/key/value layers, a matmul) that read a
  // 16-bit activation copy instead of casting (TransformerOps::activation_copies).
  long copy_reads = 0;
};

class ProfilingBackend final : public Backend {
 public:
  explicit ProfilingBackend(Backend& inner);
  ~ProfilingBackend() override;
  void set_enabled(bool on) { enabled_ = on; }
  // Waits for the recorded ops, sums them per category, and forgets them.
  OpProfile take_profile();
  // The forward convolutions run while enabled, in call order.
  const std::vector<ConvCall>& conv_calls() const { return conv_calls_; }
  // The attention forwards run while enabled (a ViT's), in call order.
  const std::vector<AttentionShape>& attention_calls() const { return attention_calls_; }

  DeviceKind kind() const override { return inner_.kind(); }
  std::string description() const override { return inner_.description(); }
  Precision precision() const override { return inner_.precision(); }
  // The ViT ops, timed the same way (matmul, attention; LayerNorm under
  // normalization, the rest under elementwise).
  TransformerOps& transformer_ops() override;
  // The EfficientNets' ops, timed: depthwise convolutions under convolution, the rest
  // under elementwise.
  MbConvOps& mbconv_ops() override;
  Stream& default_stream() override { return inner_.default_stream(); }
  std::unique_ptr<Stream> create_stream() override { return inner_.create_stream(); }
  float* allocate(std::size_t count) override { return inner_.allocate(count); }
  void release(float* ptr) noexcept override { inner_.release(ptr); }
  std::uint64_t released_blocks() const override { return inner_.released_blocks(); }
  void* allocate_host(std::size_t bytes) override { return inner_.allocate_host(bytes); }
  void release_host(void* ptr) noexcept override { inner_.release_host(ptr); }

  void upload(float* dst, const float* host_src, std::size_t count, Stream& s) override;
  void download(float* host_dst, const float* src, std::size_t count, Stream& s) override;
  void copy(float* dst, const float* src, std::size_t count, Stream& s) override;
  void fill(float* dst, float value, std::size_t count, Stream& s) override;
  void set_values(float* dst, const float* values, std::size_t count, Stream& s) override;
  void scale(float* x, float alpha, std::size_t count, Stream& s) override;
  void conv2d_forward(ConstTensorView x, const float* w, TensorView y, const ConvGeometry& g, Stream& s) override;
  void conv2d_backward_data(ConstTensorView dy, const float* w, TensorView dx, const ConvGeometry& g,
                            Stream& s) override;
  void conv2d_backward_weights(ConstTensorView x, ConstTensorView dy, float* dw, const ConvGeometry& g,
                               Stream& s) override;
  void cache_filters16(const Filter* filters, std::size_t count, Stream& s) override;
  void conv2d_backward(ConstTensorView x, ConstTensorView dy, const float* w, float* dw, TensorView dx,
                       const ConvGeometry& g, Stream& s) override;
  void deconv2d_forward(ConstTensorView x, const float* w, const float* bias, TensorView y, const ConvGeometry& g,
                        Stream& s) override;
  void deconv2d_backward_data(ConstTensorView dy, const float* w, TensorView dx, const ConvGeometry& g,
                              Stream& s) override;
  void deconv2d_backward_weights(ConstTensorView x, ConstTensorView dy, float* dw, float* dbias,
                                 const ConvGeometry& g, Stream& s) override;
  void batchnorm_stats(ConstTensorView x, float* stats, Stream& s) override;
  void batchnorm_moments(ConstTensorView x, float* moments, Stream& s) override;
  void batchnorm_local_statistics(ConstTensorView x, float* moments, float eps, float momentum, float* mean,
                                  float* invstd, float* running_mean, float* running_var, Stream& s) override;
  void batchnorm_backward_reduce_grads(ConstTensorView dy, ConstTensorView x, const float* mean, const float* invstd,
                                       const float* gamma, const float* beta, bool relu, float* reduce, float* dgamma,
                                       float* dbeta, Stream& s) override;
  void batchnorm_finalize(const float* moments, int ranks, int channels, float eps, float momentum, float* mean,
                          float* invstd, float* running_mean, float* running_var, Stream& s) override;
  void batchnorm_inference_stats(const float* running_mean, const float* running_var, int channels, float eps,
                                 float* mean, float* invstd, Stream& s) override;
  void batchnorm_apply(ConstTensorView x, const float* mean, const float* invstd, const float* gamma,
                       const float* beta, TensorView y, Stream& s) override;
  void batchnorm_backward_reduce(ConstTensorView dy, ConstTensorView x, const float* mean, float* reduce,
                                 Stream& s) override;
  void batchnorm_param_grads(const float* reduce, const float* invstd, int channels, float* dgamma, float* dbeta,
                             Stream& s) override;
  void batchnorm_backward_apply(ConstTensorView dy, ConstTensorView x, const float* mean, const float* invstd,
                                const float* gamma, const float* reduce, double count, TensorView dx,
                                Stream& s) override;
  void batchnorm_apply_relu(ConstTensorView x, const float* mean, const float* invstd, const float* gamma,
                            const float* beta, const float* residual, TensorView y, Stream& s) override;
  void batchnorm_relu_backward_reduce(ConstTensorView dy, ConstTensorView x, const float* mean, const float* invstd,
                                      const float* gamma, const float* beta, float* reduce, Stream& s) override;
  void batchnorm_relu_backward_apply(ConstTensorView dy, ConstTensorView x, const float* mean, const float* invstd,
                                     const float* gamma, const float* beta, const float* reduce, double count,
                                     TensorView dx, Stream& s) override;
  void maxpool2d_forward(ConstTensorView x, TensorView y, const PoolGeometry& g, Stream& s) override;
  void maxpool2d_backward(ConstTensorView x, ConstTensorView dy, TensorView dx, const PoolGeometry& g,
                          Stream& s) override;
  void relu_forward(const float* x, float* y, std::size_t count, Stream& s) override;
  void relu_backward(const float* y, const float* dy, float* dx, std::size_t count, Stream& s) override;
  void add_relu_forward(const float* a, const float* b, float* y, std::size_t count, Stream& s) override;
  void accumulate(const float* x, float* out, std::size_t count, Stream& s) override;
  void convert_storage(ConstTensorView src, TensorView dst, Stream& s) override;
  void accumulate_tensor(ConstTensorView x, TensorView out, Stream& s) override;
  void relu_backward_tensor(ConstTensorView y, ConstTensorView dy, TensorView dx, Stream& s) override;
  void affine_points(float* xy, std::size_t points, const float* map, Stream& s) override;
  void pixel_shuffle_forward(ConstTensorView x, TensorView y, int factor, Stream& s) override;
  void pixel_shuffle_backward(ConstTensorView dy, TensorView dx, int factor, Stream& s) override;
  void normalize_images(const std::uint8_t* src, int in_channels, TensorView dst, const float mean[3],
                        const float std[3], Stream& s) override;
  void heatmap_targets(const float* keypoints, TensorView targets, float sigma, float* mask, Stream& s) override;
  void spatial_softmax_forward(ConstTensorView x, float temperature, TensorView y, Stream& s) override;
  void spatial_softmax_backward(ConstTensorView y, ConstTensorView dy, float temperature, TensorView dx,
                                Stream& s) override;
  void heatmap_loss(ConstTensorView pred, ConstTensorView target, const float* mask, const HeatmapLoss& type,
                    float* loss, float* dpred, float loss_scale, Stream& s) override;
  void soft_argmax(ConstTensorView heatmaps, int downsample_factor, float temperature, float* coords,
                   float* confidence, Stream& s) override;
  void soft_argmax_backward(ConstTensorView heatmaps, int downsample_factor, float temperature,
                            const float* dcoords, TensorView dheatmaps, Stream& s) override;
  void adam_update(float* params, const float* grads, float* m, float* v, std::size_t count, const AdamParams& p,
                   Stream& s) override;
  void count_adam_step(float* step, float* factors, const float* lr, const AdamParams& p, Stream& s) override;
  void unscale_and_check(float* grads, std::size_t count, const float* inv_scale, float* found_inf,
                         Stream& s) override;
  void update_loss_scale(float* state, const LossScaleRule& rule, Stream& s) override;
  void scale_by(float* x, std::size_t count, const float* factor, Stream& s) override;
  void temporal_loss(const float* keypoints, const float* confidence, int frames, int num_keypoints,
                     const float* epsilon, float prob_threshold, float scale_x, float scale_y, float* loss,
                     float* dkeypoints, float grad_scale, Stream& s) override;
  void pca_loss(const float* keypoints, int frames, int num_keypoints, const PcaLossTables& tables, float scale_x,
                float scale_y, float* loss, float* dkeypoints, float grad_scale, Stream& s) override;

 private:
  struct Record {
    OpCategory category;
    std::unique_ptr<Event> start, end;
  };
  // Runs `op` on the inner backend, between two timed events when enabled.
  template <typename Op>
  void timed(OpCategory category, Stream& s, Op&& op);

  class TimedTransformerOps;
  class TimedMbConvOps;

  Backend& inner_;
  bool enabled_ = false;
  std::vector<Record> records_;
  std::vector<ConvCall> conv_calls_;
  std::vector<AttentionShape> attention_calls_;
  long copy_reads_ = 0;  // while enabled, since the last take_profile
  std::unique_ptr<TransformerOps> transformer_ops_;  // a TimedTransformerOps, made on first use
  std::unique_ptr<MbConvOps> mbconv_ops_;            // a TimedMbConvOps, made on first use
};

}  // namespace trainer::compute
