#pragma once
// The compute interface: memory and every op the network needs, with one CPU
// implementation (oneDNN + plain C++, src/compute/cpu/) and one CUDA implementation
// (cuDNN, cuBLAS and kernels/, src/compute/cuda/). Models are written once against
// this class and never name a device.
//
// Conventions
// - float32, NCHW, element counts (never bytes) unless a name says otherwise.
// - Every op that launches work takes the Stream it runs on.
// - Backward ops overwrite their outputs (no accumulation): each tensor is used
//   once per step in this network, so no gradient needs summing. The exception:
//   the unsupervised keypoint losses add into the keypoints' shared gradient.
// - Weights use PyTorch layouts: conv OIHW, transposed conv IOHW.
// - A Backend is driven from one host thread at a time (the CPU backend's
//   primitive cache is unsynchronized); other threads get their own backend.
// - Ops check that shapes agree with their geometry and throw SystemError
//   ("internal error") otherwise; library failures throw SystemError too.
// - Semantics of every op (PyTorch / lightning-pose) in docs/COMPUTE.md.
// - Precision (chosen when the backend is made): with bf16 / fp16, the six
//   convolution ops round their operands and their result to the 16-bit type and
//   accumulate in fp32 (compute/precision.hpp); every other op is fp32 always.
// - Storage (compute/tensor.hpp): views are fp32 NCHW, except that in bf16 / fp16
//   precision the backbone may keep its activations and their gradients in the
//   matching 16-bit NHWC storage (activation_storage()). The ops marked
//   [16-bit storage] below then take such views: every view of one call in the
//   same storage, except the convolutions (each operand in fp32 NCHW or in the
//   precision's 16-bit NHWC; weights and weight gradients are always fp32 OIHW) and
//   convert_storage. They read 16-bit values exactly, compute in fp32 as for fp32
//   views, and round what they store (compute/float16.hpp). A batch-norm residual
//   pointer has the storage of x.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint8_t, std::uint64_t
#include <memory>   // std::unique_ptr
#include <string>   // std::string

#include "compute/batchnorm_moments.hpp"  // batchnorm_moments_size (the moments layout)
#include "compute/losses/heatmap_loss.hpp"  // HeatmapLoss (heatmap_loss's choice of loss)
#include "compute/affine_points.hpp"          // AffineMap2D (affine_points)
#include "compute/pca_loss_tables.hpp"        // PcaLossTables (pca_loss's fitted PCA)
#include "compute/loss_scale.hpp"  // LossScaleRule (update_loss_scale)
#include "compute/precision.hpp"  // Precision
#include "compute/stream.hpp"     // Stream, Event
#include "compute/tensor.hpp"  // Shape4, TensorView, ConstTensorView, DeviceKind
#include "compute/mbconv_ops.hpp"       // MbConvOps (mbconv_ops)
#include "compute/transformer_ops.hpp"  // TransformerOps (transformer_ops)

namespace trainer::compute {

// A 2-D convolution or transposed convolution with square stride and padding.
struct ConvGeometry {
  int in_channels = 0;
  int out_channels = 0;
  int kernel = 1;
  int stride = 1;
  int pad = 0;
  int output_padding = 0;  // transposed convolution only
  // Output spatial size for an input of size `in`.
  int conv_out(int in) const { return (in + 2 * pad - kernel) / stride + 1; }
  int deconv_out(int in) const { return (in - 1) * stride - 2 * pad + kernel + output_padding; }
};

// Pooling window (max pooling, PyTorch semantics: padding is -inf, first max wins).
struct PoolGeometry {
  int kernel = 3;
  int stride = 2;
  int pad = 1;
  int out(int in) const { return (in + 2 * pad - kernel) / stride + 1; }
};

struct AdamParams {
  float lr = 1e-3f;
  double beta1 = 0.9;  // doubles, as PyTorch's: compute/adam_factors.hpp
  double beta2 = 0.999;
  float eps = 1e-8f;
  float weight_decay = 0.f;
  bool decoupled_weight_decay = false;  // AdamW
  long step = 1;                        // 1-based step used for bias correction
  // When set, lr and step are not used: the step's AdamFactors (compute/adam_factors.hpp)
  // are read from these AdamFactors::kCount floats of device memory when the update
  // runs, so a recorded step graph replays with each step's values (written by
  // set_values on the same stream before it).
  const float* device_factors = nullptr;
  // When set and nonzero when the update runs (device memory): no update at all, the
  // step that 16-mixed's loss scaler skips (compute/loss_scale.hpp).
  const float* skip = nullptr;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceKind kind() const = 0;
  virtual std::string description() const = 0;  // e.g. "cpu (oneDNN 2.6, 2 threads)"
  // The precision of the convolutions (fixed for the life of the backend).
  virtual Precision precision() const = 0;
  // The ops of the ViT backbones (compute/transformer_ops.hpp), owned by the backend.
  virtual TransformerOps& transformer_ops() = 0;
  // The EfficientNets' depthwise convolutions, SiLU, squeeze-excitation and stochastic
  // depth (compute/mbconv_ops.hpp), owned by the backend.
  virtual MbConvOps& mbconv_ops() = 0;

  // ---- streams and memory -------------------------------------------------
  virtual Stream& default_stream() = 0;
  virtual std::unique_ptr<Stream> create_stream() = 0;
  virtual float* allocate(std::size_t count) = 0;           // zero-initialized
  virtual void release(float* ptr) noexcept = 0;
  // Device blocks released so far (buffers freed, or grown into new blocks): work
  // recorded with addresses baked in (a CUDA graph of a training step) may read freed
  // memory once this count has moved since it was recorded.
  virtual std::uint64_t released_blocks() const = 0;
  // Host memory suited for asynchronous copies (pinned for CUDA).
  virtual void* allocate_host(std::size_t bytes) = 0;
  virtual void release_host(void* ptr) noexcept = 0;
  virtual void upload(float* dst, const float* host_src, std::size_t count, Stream& s) = 0;
  virtual void download(float* host_dst, const float* src, std::size_t count, Stream& s) = 0;
  virtual void copy(float* dst, const float* src, std::size_t count, Stream& s) = 0;
  virtual void fill(float* dst, float value, std::size_t count, Stream& s) = 0;
  // dst[i] = values[i] for i < count <= kMaxSetValues, the values taken from the host
  // when the call is made (carried by the launch, not read later): per-step scalars
  // for work that reads them from device memory (AdamParams::device_factors).
  static constexpr std::size_t kMaxSetValues = 16;
  virtual void set_values(float* dst, const float* values, std::size_t count, Stream& s) = 0;
  virtual void scale(float* x, float alpha, std::size_t count, Stream& s) = 0;

  // ---- convolution (no bias; ResNet convolutions have none) [16-bit storage] ----
  virtual void conv2d_forward(ConstTensorView x, const float* w, TensorView y, const ConvGeometry& g,
                              Stream& s) = 0;
  virtual void conv2d_backward_data(ConstTensorView dy, const float* w, TensorView dx,
                                    const ConvGeometry& g, Stream& s) = 0;
  virtual void conv2d_backward_weights(ConstTensorView x, ConstTensorView dy, float* dw,
                                       const ConvGeometry& g, Stream& s) = 0;
  // Both gradients from one dy: dw = backward-weights(x, dy), then, when dx.data
  // is set, dx = backward-data(dy, w). Same results as the two calls (which this
  // default makes); the CUDA backend in 16-bit precision casts dy once for both.
  virtual void conv2d_backward(ConstTensorView x, ConstTensorView dy, const float* w, float* dw, TensorView dx,
                               const ConvGeometry& g, Stream& s) {
    conv2d_backward_weights(x, dy, dw, g, s);
    if (dx.data) conv2d_backward_data(dy, w, dx, g, s);
  }
  // 16-bit filter copies (bf16 / fp16 precisions): casts every listed fp32 filter
  // [out_channels, in_channels, kernel, kernel] into the 16-bit layout the
  // convolutions read, in one pass; until the next call, or until adam_update writes
  // parameters, the convolutions given one of these filters read its copy instead of
  // casting it themselves (twice a step each). The same rounding, so the same bits.
  // A model calls it at the start of each forward, after any change of its weights.
  // The CPU backend (whose emulation rounds the filter as it convolves) and fp32 ignore
  // it, and so does the CUDA backend with TRAINER_FILTER_CACHE=0 (set_caches_filters16).
  struct Filter {
    const float* weight;
    int out_channels, in_channels, kernel;
  };
  virtual void cache_filters16(const Filter* filters, std::size_t count, Stream& s) {
    (void)filters, (void)count, (void)s;
  }
  bool caches_filters16() const { return cache_filters16_; }
  void set_caches_filters16(bool on) { cache_filters16_ = on; }
  // The CUDA backend's batch-norm kernels, over 16-bit NHWC and fp32 NCHW activations:
  // tiled (the default) or the ones an H200 ran on 2026-11-27 and 28
  // (TRAINER_BN_KERNELS=0; kernels/batchnorm.cuh, docs/GPU.md). The same values per
  // element; the CPU backend ignores it.
  bool tiled_batchnorm() const { return tiled_batchnorm_; }
  void set_tiled_batchnorm(bool on) { tiled_batchnorm_ = on; }
  // With the tiled kernels: the 16-bit channel sums of layers wider than 32 lanes (256
  // channels at eight a thread) in blocks of 32 lanes by 8 rows (the default, since
  // 2026-11-28), or laid out as an H200 ran them on 2026-11-27 (TRAINER_BN_WIDE_SUMS=0).
  // Other sums and the CPU backend ignore it.
  bool wide_sum_blocks16() const { return wide_sum_blocks16_; }
  void set_wide_sum_blocks16(bool on) { wide_sum_blocks16_ = on; }
  // The CUDA backend's batch norm: the per-channel steps between the passes over the
  // activations (the statistics from the moments, the parameter gradients from the
  // backward sums, the 16-bit passes' coefficients) folded into the kernels beside
  // them (the default, since 2026-11-28), or in their own kernels as an H200 ran them
  // (TRAINER_BN_FOLD=0; kernels/batchnorm.cuh, docs/GPU.md). The same values; the CPU
  // backend ignores it.
  bool folds_batchnorm_steps() const { return fold_batchnorm_steps_; }
  void set_folds_batchnorm_steps(bool on) { fold_batchnorm_steps_ = on; }

  // ---- transposed convolution (PyTorch ConvTranspose2d, with bias) --------
  // w is IOHW [in_channels, out_channels, k, k]; bias [out_channels] may be null.
  // output_padding < stride. dbias (may be null) = sum of dy over N, H, W.
  virtual void deconv2d_forward(ConstTensorView x, const float* w, const float* bias, TensorView y,
                                const ConvGeometry& g, Stream& s) = 0;
  virtual void deconv2d_backward_data(ConstTensorView dy, const float* w, TensorView dx,
                                      const ConvGeometry& g, Stream& s) = 0;
  virtual void deconv2d_backward_weights(ConstTensorView x, ConstTensorView dy, float* dw,
                                         float* dbias, const ConvGeometry& g, Stream& s) = 0;

  // ---- batch norm, split so synchronized BN can merge statistics between halves --
  // (the ops taking tensor views: [16-bit storage])
  // stats[0..C) = sum over N,H,W of x; stats[C..2C) = sum of x^2 (plain sums, for
  // callers that want sums; batch norm itself uses batchnorm_moments).
  virtual void batchnorm_stats(ConstTensorView x, float* stats, Stream& s) = 0;
  // This rank's per-channel moments over N,H,W, in the layout that ranks all-gather
  // and batchnorm_finalize merges (batchnorm_moments_size(C) floats):
  // mean (two floats: rounded and residual), M2 = sum of (x - mean)^2, and count
  // (N*H*W); see compute/batchnorm_moments.hpp. Mean and M2 rather than sums of x and x^2: E[x^2] - E[x]^2 in
  // float loses every digit on a channel whose |mean| is far above its spread.
  virtual void batchnorm_moments(ConstTensorView x, float* moments, Stream& s) = 0;
  // From the moments of `ranks` ranks (blocks of batchnorm_moments_size(C) floats,
  // rank by rank, as all_gather lays them out), merged in rank order with Chan et
  // al.'s formula in double (PyTorch's batch_norm_gather_stats_with_counts): mean
  // and 1/sqrt(var+eps) (biased var), and, when running_mean is non-null, the
  // running statistics updated with momentum and the unbiased variance (PyTorch
  // semantics). Ranks with count 0 add nothing.
  virtual void batchnorm_finalize(const float* moments, int ranks, int channels, float eps,
                                  float momentum, float* mean, float* invstd, float* running_mean,
                                  float* running_var, Stream& s) = 0;
  // batchnorm_moments, then batchnorm_finalize of these moments alone (ranks = 1): a
  // batch norm whose statistics are this rank's. One op, so that a backend can run
  // both in one pass; the same values as the two.
  virtual void batchnorm_local_statistics(ConstTensorView x, float* moments, float eps, float momentum, float* mean,
                                          float* invstd, float* running_mean, float* running_var, Stream& s) {
    batchnorm_moments(x, moments, s);
    batchnorm_finalize(moments, 1, x.shape.c, eps, momentum, mean, invstd, running_mean, running_var, s);
  }
  // Inference: mean and invstd from the running statistics.
  virtual void batchnorm_inference_stats(const float* running_mean, const float* running_var,
                                         int channels, float eps, float* mean, float* invstd,
                                         Stream& s) = 0;
  // y = (x - mean) * invstd * gamma + beta
  virtual void batchnorm_apply(ConstTensorView x, const float* mean, const float* invstd,
                               const float* gamma, const float* beta, TensorView y, Stream& s) = 0;
  // reduce[0..C) = sum dy; reduce[C..2C) = sum dy * (x - mean).
  virtual void batchnorm_backward_reduce(ConstTensorView dy, ConstTensorView x, const float* mean,
                                         float* reduce, Stream& s) = 0;
  // dgamma = reduce[C..2C) * invstd; dbeta = reduce[0..C) (local reduce).
  virtual void batchnorm_param_grads(const float* reduce, const float* invstd, int channels,
                                     float* dgamma, float* dbeta, Stream& s) = 0;
  // dx from the (global) reduce over `count` values per channel (training mode):
  // dx = (dy - reduce0/count - (x - mean) * invstd^2 * reduce1/count) * invstd * gamma.
  // Eval-mode backward (dx = dy * invstd * gamma) is batchnorm_apply(dy, zeros,
  // invstd, gamma, nullptr, dx). gamma/beta may be null (1 and 0).
  virtual void batchnorm_backward_apply(ConstTensorView dy, ConstTensorView x, const float* mean,
                                        const float* invstd, const float* gamma,
                                        const float* reduce, double count, TensorView dx,
                                        Stream& s) = 0;
  // Fused with what follows a batch norm in a ResNet, to save passes over memory
  // (compute/batchnorm_apply_rule.hpp: the same roundings as the separate ops, so
  // the result is the same bit for bit on one backend):
  // y = relu(batchnorm_apply(x) + residual), residual may be null: batchnorm_apply,
  // then add_relu_forward (or relu_forward) in one pass.
  virtual void batchnorm_apply_relu(ConstTensorView x, const float* mean, const float* invstd,
                                    const float* gamma, const float* beta, const float* residual,
                                    TensorView y, Stream& s) = 0;
  // batchnorm_backward_reduce and batchnorm_backward_apply of a batch norm followed by
  // a ReLU (no residual), given dy at the ReLU's output: the ReLU's mask is recomputed
  // from x, so the masked gradient is never written. gamma/beta are the forward's.
  virtual void batchnorm_relu_backward_reduce(ConstTensorView dy, ConstTensorView x, const float* mean,
                                              const float* invstd, const float* gamma, const float* beta,
                                              float* reduce, Stream& s) = 0;
  virtual void batchnorm_relu_backward_apply(ConstTensorView dy, ConstTensorView x, const float* mean,
                                             const float* invstd, const float* gamma, const float* beta,
                                             const float* reduce, double count, TensorView dx, Stream& s) = 0;
  // batchnorm_backward_reduce (relu: batchnorm_relu_backward_reduce, which takes gamma
  // and beta), then batchnorm_param_grads from those local sums into dgamma and dbeta
  // (either may be null). One op, so that a backend can add the parameter gradients to
  // the sums' last pass; the same values as the two.
  virtual void batchnorm_backward_reduce_grads(ConstTensorView dy, ConstTensorView x, const float* mean,
                                               const float* invstd, const float* gamma, const float* beta, bool relu,
                                               float* reduce, float* dgamma, float* dbeta, Stream& s) {
    if (relu) batchnorm_relu_backward_reduce(dy, x, mean, invstd, gamma, beta, reduce, s);
    else batchnorm_backward_reduce(dy, x, mean, reduce, s);
    batchnorm_param_grads(reduce, invstd, x.shape.c, dgamma, dbeta, s);
  }
  // Whether layers use the fused ops above (the default) or the separate ops of the
  // path that ran on a GPU on 2026-11-22 (TRAINER_FUSED_NORM=0; docs/GPU.md).
  bool fuses_norm_activation() const { return fuse_norm_activation_; }
  void set_fuses_norm_activation(bool on) { fuse_norm_activation_ = on; }
  // The storage of the backbone's activations and their gradients: fp32 NCHW, or
  // (16-bit precisions only) the precision's 16-bit NHWC, which removes the casts
  // around every convolution and halves the bytes every other op moves. The CUDA
  // backend picks 16-bit NHWC for bf16-mixed / 16-mixed unless TRAINER_NHWC16=0 (the
  // path measured on 2026-11-26, docs/GPU.md); the CPU backend keeps fp32 unless a
  // test sets it. Throws SystemError for a 16-bit storage that is not the precision's.
  Storage activation_storage() const { return activation_storage_; }
  void set_activation_storage(Storage storage);

  // ---- storage conversion and the 16-bit-capable elementwise ops -------------
  // dst = src element by element between any two storages (same shape), rounding
  // to 16 bits where dst has 16 [16-bit storage].
  virtual void convert_storage(ConstTensorView src, TensorView dst, Stream& s);
  // out += x (same shape and storage) [16-bit storage].
  virtual void accumulate_tensor(ConstTensorView x, TensorView out, Stream& s);
  // dx = dy where y > 0, else 0 (y is a ReLU's output; dx may alias dy) [16-bit storage].
  virtual void relu_backward_tensor(ConstTensorView y, ConstTensorView dy, TensorView dx, Stream& s);

  // ---- pooling and elementwise --------------------------------------------
  // [16-bit storage]
  virtual void maxpool2d_forward(ConstTensorView x, TensorView y, const PoolGeometry& g,
                                 Stream& s) = 0;
  // Recomputes the argmax from x (first maximum wins, as PyTorch) [16-bit storage].
  virtual void maxpool2d_backward(ConstTensorView x, ConstTensorView dy, TensorView dx,
                                  const PoolGeometry& g, Stream& s) = 0;
  virtual void relu_forward(const float* x, float* y, std::size_t count, Stream& s) = 0;
  // dx = dy where y > 0 (y is the ReLU output); dx may alias dy.
  virtual void relu_backward(const float* y, const float* dy, float* dx, std::size_t count,
                             Stream& s) = 0;
  // Residual join: y = relu(a + b).
  virtual void add_relu_forward(const float* a, const float* b, float* y, std::size_t count,
                                Stream& s) = 0;
  // out += x
  virtual void accumulate(const float* x, float* out, std::size_t count, Stream& s) = 0;
  // Maps `points` (x, y) pairs in place by the AffineMap2D whose 6 coefficients
  // (AffineMap2D::m) are in backend memory at `map`, read when the work runs: a
  // recorded step replays with each step's map (compute/affine_points.hpp).
  virtual void affine_points(float* xy, std::size_t points, const float* map, Stream& s) = 0;
  virtual void pixel_shuffle_forward(ConstTensorView x, TensorView y, int factor, Stream& s) = 0;
  virtual void pixel_shuffle_backward(ConstTensorView dy, TensorView dx, int factor, Stream& s) = 0;

  // ---- input and heatmap ops (kernels/ on CUDA) ---------------------------
  // uint8 NHWC frames with `in_channels` (1 or 3) -> float NCHW with 3 channels,
  // (v/255 - mean[c]) / std[c]; grayscale is replicated to 3 channels.
  virtual void normalize_images(const std::uint8_t* src, int in_channels, TensorView dst,
                                const float mean[3], const float std[3], Stream& s) = 0;
  // keypoints: [N, K, 2] (x, y in heatmap pixels, NaN = unlabeled; the caller scales
  // image pixels: x_hm = x_img * W_hm / W_img, so heatmap pixel i <-> image i * 2^d).
  // Writes the Gaussian targets [N, K, H, W], exp(-((c-x)^2 + (r-y)^2) / (2 sigma^2))
  // at pixel (r, c), normalized to sum 1, and mask[N*K] = 1 where the keypoint counts
  // in the loss. lightning-pose's rule: a keypoint with a NaN coordinate or with
  // x < -1, x > W + 1, y < -1 or y > H + 1 gets an all-zero target and mask 0; one
  // marked with kUniformTargetMark (keypoint_rule.hpp: a label missing from the data,
  // with uniform_heatmaps_for_nan_keypoints) gets the uniform target 1/(H*W) and mask 1.
  virtual void heatmap_targets(const float* keypoints, TensorView targets, float sigma,
                               float* mask, Stream& s) = 0;
  // Softmax over H*W of each (n, c) plane of temperature * x (kornia's
  // spatial_softmax2d: the temperature MULTIPLIES, so higher is sharper). The head
  // uses temperature 1; soft_argmax uses 1000.
  virtual void spatial_softmax_forward(ConstTensorView x, float temperature, TensorView y,
                                       Stream& s) = 0;
  // dx = temperature * y * (dy - sum over the plane of y * dy); y is the forward output.
  virtual void spatial_softmax_backward(ConstTensorView y, ConstTensorView dy, float temperature,
                                        TensorView dx, Stream& s) = 0;
  // Masked heatmap loss (lightning-pose semantics, docs/COMPUTE.md) written to the
  // device scalar loss[0]; dpred [N, K, H, W] receives d(loss * loss_scale)/d(pred)
  // when non-null (zero for excluded keypoints). The loss is the mean over the
  // counted keypoints of `type`'s per-plane value (compute/losses/heatmap_<name>.hpp:
  // mse, kl, js, ...), times the weight 0.5. A keypoint counts where mask[n*K + k]
  // != 0; with mask == nullptr, where its target is not all zero (lightning-pose's
  // own rule). No counted keypoint: loss 0 and zero gradient (lightning-pose: NaN).
  virtual void heatmap_loss(ConstTensorView pred, ConstTensorView target, const float* mask,
                            const HeatmapLoss& type, float* loss, float* dpred, float loss_scale,
                            Stream& s) = 0;
  // Soft-argmax keypoints from heatmaps (lightning-pose run_subpixelmaxima):
  // coords [N, K, 2] (x, y) in image pixels of the network input, confidence [N, K]
  // (may be null). Per plane: d times { torch bicubic x2 (align_corners=False, A=-0.75,
  // clamped taps), then kornia filter2d with the 5x5 [1 4 6 4 1]^2/256 kernel, zero
  // border }, softmax(temperature * h), expectation of (column, row), confidence = the
  // softmax mass in the 5x5 window around the truncated expectation, and finally the
  // grid offset (2^d - 1)/2 subtracted (0.5, 1.5, 3.5; lightning-pose uses 2.5 for
  // d = 3, a slip: a one-hot at heatmap pixel p must give p * 2^d). Host-side result
  // on CPU; backward: soft_argmax_backward.
  virtual void soft_argmax(ConstTensorView heatmaps, int downsample_factor, float temperature,
                           float* coords, float* confidence, Stream& s) = 0;
  // The gradient of soft_argmax's coords: dheatmaps [N, K, H, W] (overwritten) from
  // dcoords [N, K, 2], for the unsupervised losses on keypoints (the confidence has no
  // gradient: lightning-pose uses it only as a mask). Recomputes the forward.
  virtual void soft_argmax_backward(ConstTensorView heatmaps, int downsample_factor,
                                    float temperature, const float* dcoords,
                                    TensorView dheatmaps, Stream& s) = 0;

  // ---- optimizer ----------------------------------------------------------
  // torch.optim.Adam (weight_decay adds wd * param to the gradient) or, with
  // decoupled_weight_decay, AdamW (param *= 1 - lr * wd first); amsgrad off.
  virtual void adam_update(float* params, const float* grads, float* m, float* v, std::size_t count,
                           const AdamParams& p, Stream& s) = 0;
  // 16-mixed's step count, on the device because only the device knows which steps
  // the loss scaler skips: unless p.skip is set and nonzero, step[0] += 1 and
  // factors[0..AdamFactors::kCount) become that step's, from lr[0] and p's betas and
  // weight decay (compute::count_adam_step; p.lr, p.step and p.device_factors unused).
  // One thread's work: a recorded step replays it.
  virtual void count_adam_step(float* step, float* factors, const float* lr, const AdamParams& p, Stream& s) = 0;

  // ---- mixed precision ------------------------------------------------------
  // Loss-scale unscaling in one pass (torch's _amp_foreach_non_finite_check_and_unscale_):
  // grads[i] *= inv_scale, and found_inf[0] (device memory) is set to 1 when any
  // result is inf or NaN. found_inf is never cleared here, so several ranges can
  // share one flag: the caller zeroes it (fill) before the first range.
  // inv_scale is read from device memory when the kernel runs.
  virtual void unscale_and_check(float* grads, std::size_t count, const float* inv_scale, float* found_inf,
                                 Stream& s) = 0;
  // The loss scale's update after the check, on the device (compute::advance_loss_scale
  // over compute::kLossScaleSlots floats at `state`).
  virtual void update_loss_scale(float* state, const LossScaleRule& rule, Stream& s) = 0;
  // x[0..count) *= factor[0], the factor read from device memory when the kernel runs
  // (the loss scale into a loss gradient).
  virtual void scale_by(float* x, std::size_t count, const float* factor, Stream& s) = 0;

  // ---- unsupervised keypoint losses (lightning-pose TemporalLoss, PCALoss) ------
  // Both read keypoints [frames, K, 2] in network-input pixels and multiply them by
  // (scale_x, scale_y) into frame pixels, where the epsilons and the PCA live.
  // loss[0] (backend memory) is overwritten; dkeypoints [frames, K, 2] receives
  // += grad_scale * d(loss)/d(keypoints): ADDED, since several losses share the
  // keypoints' gradient (the caller zeroes it); null dkeypoints: the loss only.
  // The norm's gradient at 0 is 0, and relu's at 0 is 0 (PyTorch). Deterministic
  // (no float atomics). Semantics in docs/COMPUTE.md.
  //
  // TemporalLoss: per (t, k), t < frames - 1, the L2 norm of keypoint k's move from
  // frame t to t + 1, set to 0 where confidence[t, k] or confidence[t + 1, k] <
  // prob_threshold (confidence [frames, K] may be null: nothing masked); then
  // relu(norm - epsilon[k]) (epsilon: K floats in backend memory); loss = mean
  // over all (frames - 1) * K entries (0 for a single frame).
  virtual void temporal_loss(const float* keypoints, const float* confidence, int frames,
                             int num_keypoints, const float* epsilon, float prob_threshold,
                             float scale_x, float scale_y, float* loss, float* dkeypoints,
                             float grad_scale, Stream& s) = 0;
  // PCALoss (pca_singleview / pca_multiview): per frame, tables.rows_per_frame rows
  // x of tables.dims values gathered from the frame's keypoints (PcaLossTables);
  // reproject(x) = (x - mean) V^T V + mean with V the kept components; per row and
  // pair of columns (2j, 2j + 1) the L2 norm of x - reproject(x); relu(norm -
  // tables.epsilon); loss = mean over frames * rows_per_frame * dims / 2 entries.
  virtual void pca_loss(const float* keypoints, int frames, int num_keypoints,
                        const PcaLossTables& tables, float scale_x, float scale_y, float* loss,
                        float* dkeypoints, float grad_scale, Stream& s) = 0;

 private:
  bool fuse_norm_activation_ = true;
  bool cache_filters16_ = true;
  bool tiled_batchnorm_ = true;
  bool wide_sum_blocks16_ = true;
  bool fold_batchnorm_steps_ = true;
  Storage activation_storage_ = Storage::f32_nchw;
};

// The 16-bit NHWC storage whose values `precision` rounds to (fp32 NCHW for fp32).
Storage storage_16bit_of(Precision precision);

// The CPU backend (oneDNN); threads = 0 means OMP_NUM_THREADS or the core count.
// With bf16 / fp16 it emulates the GPU's 16-bit rounding around fp32 convolutions:
// the same numerics (up to accumulation order), no speed-up.
std::unique_ptr<Backend> make_cpu_backend(int threads = 0, Precision precision = Precision::fp32);
#ifdef TRAINER_WITH_CUDA
// The CUDA backend on the given (already selected) device ordinal (more options:
// compute/cuda/cuda_backend.hpp).
std::unique_ptr<Backend> make_cuda_backend(int device_ordinal, Precision precision = Precision::fp32);
#endif

// RAII owner of `count` floats on a backend.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Backend& backend, std::size_t count)
      : backend_(&backend), data_(count ? backend.allocate(count) : nullptr), count_(count) {}
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : backend_(o.backend_), data_(o.data_), count_(o.count_) {
    o.data_ = nullptr;
    o.count_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      backend_ = o.backend_;
      data_ = o.data_;
      count_ = o.count_;
      o.data_ = nullptr;
      o.count_ = 0;
    }
    return *this;
  }
  float* data() { return data_; }
  const float* data() const { return data_; }
  std::size_t size() const { return count_; }
  TensorView view(Shape4 s) { return {data_, s}; }
  void reset() {
    if (data_) backend_->release(data_);
    data_ = nullptr;
    count_ = 0;
  }

 private:
  Backend* backend_ = nullptr;
  float* data_ = nullptr;
  std::size_t count_ = 0;
};

// Grows `buffer` to at least `count` floats, reallocating (contents not kept) only
// when it is smaller: step buffers sized by the batch are reused from step to step.
inline void ensure_capacity(Backend& backend, DeviceBuffer& buffer, std::size_t count) {
  if (buffer.size() < count) buffer = DeviceBuffer(backend, count);
}

}  // namespace trainer::compute
