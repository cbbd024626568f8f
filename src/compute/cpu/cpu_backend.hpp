#pragma once
// The CPU backend: oneDNN primitives for the convolutions, OpenMP loops for the
// rest. Internal to src/compute/cpu/; everything else sees only compute::Backend.
//
// Threads: every op runs on the calling thread's OpenMP team of `threads_`
// threads (oneDNN's OpenMP runtime reads the same setting). All caches live in the
// object: two backends never share state, one backend is not thread-safe.
#include <array>      // std::array of staging buffers
#include <atomic>     // std::atomic (the released-blocks count)
#include <cstdint>    // std::uint64_t
#include <map>        // std::map for the primitive cache
#include <memory>     // std::unique_ptr
#include <string>     // std::string cache keys

#include <oneapi/dnnl/dnnl.hpp>  // dnnl::engine, dnnl::stream, primitives

#include "compute/backend.hpp"  // Backend, geometries, views
#include "compute/cpu/cpu_mbconv_ops.hpp"       // CpuMbConvOps
#include "compute/cpu/cpu_transformer_ops.hpp"  // CpuTransformerOps
#include "util/env.hpp"      // Env

namespace trainer::compute::cpu {

// The primitives and memory descriptors of one convolution shape, created once.
// A "convolution" here is always described in the forward direction
// x[N, Cin, H, W] (*) w[Cout, Cin, k, k] -> y[N, Cout, OH, OW]; transposed
// convolutions reuse it with the roles of x and y swapped (see cpu_conv.cpp).
struct ConvPlan;

// A growable, 64-byte aligned scratch buffer. The convolutions stage their operands
// in oneDNN's preferred layouts here; one buffer per operand role (first input,
// second input, output) shared by all shapes, so memory grows with the largest
// tensor, not with the number of layers.
class StagingBuffer {
 public:
  StagingBuffer() = default;
  StagingBuffer(const StagingBuffer&) = delete;
  StagingBuffer& operator=(const StagingBuffer&) = delete;
  ~StagingBuffer();
  void* reserve(std::size_t bytes);  // contents are not preserved when it grows

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

class CpuBackend final : public Backend {
 public:
  // Reads OMP_NUM_THREADS (threads = 0) and TRAINER_CPU_CONV_LAYOUT from `env`
  // (the first form: from this process's environment).
  CpuBackend(int threads, Precision precision);
  CpuBackend(int threads, Precision precision, const Env& env);
  ~CpuBackend() override;

  DeviceKind kind() const override { return DeviceKind::cpu; }
  std::string description() const override;
  Precision precision() const override { return precision_; }
  int threads() const { return threads_; }
  TransformerOps& transformer_ops() override { return transformer_ops_; }
  MbConvOps& mbconv_ops() override { return mbconv_ops_; }

  Stream& default_stream() override;
  std::unique_ptr<Stream> create_stream() override;
  float* allocate(std::size_t count) override;
  void release(float* ptr) noexcept override;
  std::uint64_t released_blocks() const override { return released_blocks_.load(std::memory_order_relaxed); }
  void* allocate_host(std::size_t bytes) override;
  void release_host(void* ptr) noexcept override;
  void upload(float* dst, const float* host_src, std::size_t count, Stream& s) override;
  void download(float* host_dst, const float* src, std::size_t count, Stream& s) override;
  void copy(float* dst, const float* src, std::size_t count, Stream& s) override;
  void fill(float* dst, float value, std::size_t count, Stream& s) override;
  void set_values(float* dst, const float* values, std::size_t count, Stream& s) override;
  void scale(float* x, float alpha, std::size_t count, Stream& s) override;

  void conv2d_forward(ConstTensorView x, const float* w, TensorView y, const ConvGeometry& g,
                      Stream& s) override;
  void conv2d_backward_data(ConstTensorView dy, const float* w, TensorView dx,
                            const ConvGeometry& g, Stream& s) override;
  void conv2d_backward_weights(ConstTensorView x, ConstTensorView dy, float* dw,
                               const ConvGeometry& g, Stream& s) override;
  void deconv2d_forward(ConstTensorView x, const float* w, const float* bias, TensorView y,
                        const ConvGeometry& g, Stream& s) override;
  void deconv2d_backward_data(ConstTensorView dy, const float* w, TensorView dx,
                              const ConvGeometry& g, Stream& s) override;
  void deconv2d_backward_weights(ConstTensorView x, ConstTensorView dy, float* dw, float* dbias,
                                 const ConvGeometry& g, Stream& s) override;

  void batchnorm_stats(ConstTensorView x, float* stats, Stream& s) override;
  void batchnorm_moments(ConstTensorView x, float* moments, Stream& s) override;
  void batchnorm_finalize(const float* moments, int ranks, int channels, float eps, float momentum,
                          float* mean, float* invstd, float* running_mean, float* running_var,
                          Stream& s) override;
  void batchnorm_inference_stats(const float* running_mean, const float* running_var,
                                 int channels, float eps, float* mean, float* invstd,
                                 Stream& s) override;
  void batchnorm_apply(ConstTensorView x, const float* mean, const float* invstd,
                       const float* gamma, const float* beta, TensorView y, Stream& s) override;
  void batchnorm_backward_reduce(ConstTensorView dy, ConstTensorView x, const float* mean,
                                 float* reduce, Stream& s) override;
  void batchnorm_param_grads(const float* reduce, const float* invstd, int channels,
                             float* dgamma, float* dbeta, Stream& s) override;
  void batchnorm_backward_apply(ConstTensorView dy, ConstTensorView x, const float* mean,
                                const float* invstd, const float* gamma, const float* reduce,
                                double count, TensorView dx, Stream& s) override;
  void batchnorm_apply_relu(ConstTensorView x, const float* mean, const float* invstd, const float* gamma,
                            const float* beta, const float* residual, TensorView y, Stream& s) override;
  void batchnorm_relu_backward_reduce(ConstTensorView dy, ConstTensorView x, const float* mean,
                                      const float* invstd, const float* gamma, const float* beta,
                                      float* reduce, Stream& s) override;
  void batchnorm_relu_backward_apply(ConstTensorView dy, ConstTensorView x, const float* mean,
                                     const float* invstd, const float* gamma, const float* beta,
                                     const float* reduce, double count, TensorView dx, Stream& s) override;

  void maxpool2d_forward(ConstTensorView x, TensorView y, const PoolGeometry& g,
                         Stream& s) override;
  void maxpool2d_backward(ConstTensorView x, ConstTensorView dy, TensorView dx,
                          const PoolGeometry& g, Stream& s) override;
  void relu_forward(const float* x, float* y, std::size_t count, Stream& s) override;
  void relu_backward(const float* y, const float* dy, float* dx, std::size_t count,
                     Stream& s) override;
  void add_relu_forward(const float* a, const float* b, float* y, std::size_t count,
                        Stream& s) override;
  void accumulate(const float* x, float* out, std::size_t count, Stream& s) override;
  void convert_storage(ConstTensorView src, TensorView dst, Stream& s) override;
  void accumulate_tensor(ConstTensorView x, TensorView out, Stream& s) override;
  void relu_backward_tensor(ConstTensorView y, ConstTensorView dy, TensorView dx, Stream& s) override;
  void affine_points(float* xy, std::size_t points, const float* map, Stream& s) override;
  void pixel_shuffle_forward(ConstTensorView x, TensorView y, int factor, Stream& s) override;
  void pixel_shuffle_backward(ConstTensorView dy, TensorView dx, int factor, Stream& s) override;

  void normalize_images(const std::uint8_t* src, int in_channels, TensorView dst,
                        const float mean[3], const float std[3], Stream& s) override;
  void heatmap_targets(const float* keypoints, TensorView targets, float sigma, float* mask,
                       Stream& s) override;
  void spatial_softmax_forward(ConstTensorView x, float temperature, TensorView y,
                               Stream& s) override;
  void spatial_softmax_backward(ConstTensorView y, ConstTensorView dy, float temperature,
                                TensorView dx, Stream& s) override;
  void heatmap_loss(ConstTensorView pred, ConstTensorView target, const float* mask,
                    const HeatmapLoss& type, float* loss, float* dpred, float loss_scale,
                    Stream& s) override;
  void soft_argmax(ConstTensorView heatmaps, int downsample_factor, float temperature,
                   float* coords, float* confidence, Stream& s) override;
  void soft_argmax_backward(ConstTensorView heatmaps, int downsample_factor, float temperature,
                            const float* dcoords, TensorView dheatmaps, Stream& s) override;

  void adam_update(float* params, const float* grads, float* m, float* v, std::size_t count,
                   const AdamParams& p, Stream& s) override;

  void count_adam_step(float* step, float* factors, const float* lr, const AdamParams& p, Stream& s) override;

  void unscale_and_check(float* grads, std::size_t count, const float* inv_scale, float* found_inf,
                         Stream& s) override;
  void update_loss_scale(float* state, const LossScaleRule& rule, Stream& s) override;
  void scale_by(float* x, std::size_t count, const float* factor, Stream& s) override;

  // cpu_keypoint_losses.cpp
  void temporal_loss(const float* keypoints, const float* confidence, int frames, int num_keypoints,
                     const float* epsilon, float prob_threshold, float scale_x, float scale_y,
                     float* loss, float* dkeypoints, float grad_scale, Stream& s) override;
  void pca_loss(const float* keypoints, int frames, int num_keypoints, const PcaLossTables& tables,
                float scale_x, float scale_y, float* loss, float* dkeypoints, float grad_scale,
                Stream& s) override;

 private:
  std::atomic<std::uint64_t> released_blocks_{0};
  // Sets the calling thread's OpenMP team size (read by oneDNN and our loops).
  void enter() const;
  // The cached plan for a forward-direction convolution shape (created on first use).
  ConvPlan& conv_plan(int n, int cin, int h, int w, int cout, int oh, int ow, int kernel,
                      int stride, int pad);
  // The three oneDNN executions on a plan.
  void run_conv_forward(ConvPlan& p, const float* x, const float* w, float* y);
  void run_conv_backward_data(ConvPlan& p, const float* dy, const float* w, float* dx);
  void run_conv_backward_weights(ConvPlan& p, const float* x, const float* dy, float* dw);
  // Mixed-precision emulation (cpu_conv.cpp): `src` itself in fp32, else a copy
  // rounded to the 16-bit type in rounded_[slot]; and in-place rounding of a result.
  const float* rounded_operand(int slot, const float* src, std::size_t count);
  void round_result(float* data, std::size_t count);

  int threads_;
  Precision precision_;
  CpuTransformerOps transformer_ops_{threads_, precision_};  // after threads_ and precision_: reads them
  CpuMbConvOps mbconv_ops_{threads_};
  // Convolution layouts: oneDNN's choice (blocked, with reorders at the op's
  // boundary) or plain NCHW/OIHW throughout (no reorders). TRAINER_CPU_CONV_LAYOUT.
  bool blocked_layouts_;
  dnnl::engine engine_;
  dnnl::stream dnnl_stream_;
  std::unique_ptr<Stream> default_stream_;
  std::map<std::string, std::unique_ptr<ConvPlan>> conv_plans_;
  std::array<StagingBuffer, 3> staging_;  // first input, second input, output
  std::array<StagingBuffer, 2> rounded_;  // 16-bit-rounded copies of the two operands
};

}  // namespace trainer::compute::cpu
