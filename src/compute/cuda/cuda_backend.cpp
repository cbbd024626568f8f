// The CUDA implementation of compute::Backend: cuDNN for convolutions, cuBLAS for
// BLAS-1 updates, and our kernels (kernels/*.cu) for everything else. Every op
// only enqueues work on the given stream; nothing here synchronizes the device
// except the one-time cuDNN algorithm search per convolution shape.
#include "compute/cuda/cuda_backend.hpp"

#include <cublas_v2.h>         // cublasGetProperty
#include <cuda_runtime_api.h>  // cudaMalloc, cudaMemcpyAsync, ...
#include <cudnn.h>             // cudnnConvolution*
#include <algorithm>           // std::max
#include <atomic>              // std::atomic (the released-blocks count)
#include <initializer_list>    // std::initializer_list
#include <cstdint>             // std::uint16_t for the 16-bit copies, std::uint64_t
#include <sstream>             // std::ostringstream for description()
#include <string>              // std::to_string

#include "adam.cuh"                       // kernels::adam_update
#include "batchnorm.cuh"                  // kernels::batchnorm_*
#include "cast.cuh"                       // kernels::cast_to_16, cast_from_16, unscale_and_check
#include "compute/cuda/conv_runner.hpp"   // ConvRunner, ConvProblem, ConvPass
#include "compute/cuda/cuda_check.hpp"    // CUDA_CHECK, CUDNN_CHECK
#include "compute/cuda/cuda_stream.hpp"   // CudaStream, as_cuda
#include "compute/cuda/cuda_mbconv_ops.hpp"       // CudaMbConvOps
#include "compute/cuda/cuda_transformer_ops.hpp"  // CudaTransformerOps
#include "compute/cuda/cudnn_raii.hpp"    // CudnnHandle
#include "compute/cuda/filter_cache.hpp"  // FilterCache (cache_filters16)
#include "elementwise.cuh"                // kernels::fill, relu, ...
#include "heatmap.cuh"                    // kernels::heatmap_targets, spatial_softmax_*, soft_argmax
#include "heatmap_loss.cuh"               // kernels::count_loss_planes, heatmap_loss_total
#include "image.cuh"                      // kernels::normalize_images, pixel_shuffle_*
#include "keypoint_losses.cuh"            // kernels::temporal_loss, pca_loss
#include "nhwc16.cuh"                     // kernels::nhwc16_* (16-bit NHWC activations)
#include "pool.cuh"                       // kernels::maxpool2d_*
#include "util/error.hpp"                 // UserError, TRAINER_ASSERT

namespace trainer::compute {
namespace {

using cuda::as_cuda;
using cuda::ConvPass;
using cuda::ConvProblem;

#define SHAPE_CHECK(cond, msg) TRAINER_ASSERT(cond, msg)

// True when device code can dereference `p` (device, managed or pinned-mapped memory).
bool device_accessible(const void* p) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error of an unknown pointer
    return false;
  }
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
}

class CudaBackend final : public Backend {
 public:
  CudaBackend(int device, const CudaBackendOptions& options)
      : device_(device),
        options_(options),
        convs_(options.conv_algorithms, options.allow_tf32, options.conv_workspace_limit) {
    int count = 0;
    const cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc == cudaErrorInsufficientDriver || rc == cudaErrorNoDevice || (rc == cudaSuccess && count == 0))
      throw UserError(std::string("no usable GPU for the CUDA backend: ") +
                          (rc == cudaSuccess ? "no device visible" : cudaGetErrorString(rc)),
                      "check the NVIDIA driver (it must support CUDA " + std::to_string(CUDART_VERSION / 1000) +
                          "), CUDA_VISIBLE_DEVICES and the job's GPU request, or use accelerator=cpu");
    CUDA_CHECK(rc);
    TRAINER_ASSERT(device >= 0 && device < count,
                   "CUDA device ordinal " << device << " out of range (" << count << " visible)");
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaGetDeviceProperties(&props_, device));
    default_stream_ = std::make_unique<cuda::CudaStream>();
    cudnn_ = std::make_unique<cuda::CudnnHandle>();
    if (options.nhwc16_activations) set_activation_storage(storage_16bit_of(options.precision));
  }

  ~CudaBackend() override {
    // Let queued work finish before handles and streams go away.
    if (default_stream_) cudaStreamSynchronize(default_stream_->get());
  }

  DeviceKind kind() const override { return DeviceKind::cuda; }
  Precision precision() const override { return options_.precision; }
  TransformerOps& transformer_ops() override { return transformer_ops_; }
  MbConvOps& mbconv_ops() override { return mbconv_ops_; }

  std::string description() const override {
    std::ostringstream os;
    const auto cudnn = cudnnGetVersion();
    int major = 0, minor = 0, patch = 0;  // as cublasGetVersion reports it, without a handle
    cublasGetProperty(MAJOR_VERSION, &major);
    cublasGetProperty(MINOR_VERSION, &minor);
    cublasGetProperty(PATCH_LEVEL, &patch);
    const int cublas = major * 10000 + minor * 100 + patch;
    os << "cuda (device " << device_ << ": " << props_.name << ", sm_" << props_.major
       << props_.minor << ", " << (props_.totalGlobalMem >> 20) << " MiB; cuDNN " << cudnn / 10000
       << "." << (cudnn / 100) % 100 << "; cuBLAS " << cublas << "; TF32 "
       << (options_.allow_tf32 ? "on" : "off") << "; convolutions: " << convs_.path();
    if (options_.precision != Precision::fp32)
      os << "; precision " << precision_name(options_.precision) << ": 16-bit NHWC convolutions"
         << (is_16bit(activation_storage()) ? " and activations" : ", fp32 activations");
    os << ")";
    return os.str();
  }

  // ---- streams and memory -------------------------------------------------
  Stream& default_stream() override { return *default_stream_; }
  std::unique_ptr<Stream> create_stream() override { return std::make_unique<cuda::CudaStream>(); }

  float* allocate(std::size_t count) override {
    if (count == 0) return nullptr;
    void* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, count * sizeof(float)));
    // Zero on the default stream and wait: allocation happens at setup, and the
    // memory may be used next on any stream.
    CUDA_CHECK(cudaMemsetAsync(p, 0, count * sizeof(float), default_stream_->get()));
    CUDA_CHECK(cudaStreamSynchronize(default_stream_->get()));
    return static_cast<float*>(p);
  }
  void release(float* ptr) noexcept override {
    if (!ptr) return;
    cudaFree(ptr);
    released_blocks_.fetch_add(1, std::memory_order_relaxed);
  }
  std::uint64_t released_blocks() const override { return released_blocks_.load(std::memory_order_relaxed); }
  void* allocate_host(std::size_t bytes) override {
    void* p = nullptr;
    if (bytes) CUDA_CHECK(cudaMallocHost(&p, bytes));
    return p;
  }
  void release_host(void* ptr) noexcept override {
    if (ptr) cudaFreeHost(ptr);
  }
  void upload(float* dst, const float* host_src, std::size_t count, Stream& s) override {
    if (count)
      CUDA_CHECK(cudaMemcpyAsync(dst, host_src, count * sizeof(float), cudaMemcpyHostToDevice,
                                 as_cuda(s).get()));
  }
  void download(float* host_dst, const float* src, std::size_t count, Stream& s) override {
    if (count)
      CUDA_CHECK(cudaMemcpyAsync(host_dst, src, count * sizeof(float), cudaMemcpyDeviceToHost,
                                 as_cuda(s).get()));
  }
  void copy(float* dst, const float* src, std::size_t count, Stream& s) override {
    if (count && dst != src)
      CUDA_CHECK(cudaMemcpyAsync(dst, src, count * sizeof(float), cudaMemcpyDeviceToDevice,
                                 as_cuda(s).get()));
  }
  void fill(float* dst, float value, std::size_t count, Stream& s) override {
    kernels::fill(dst, value, count, as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void set_values(float* dst, const float* values, std::size_t count, Stream& s) override {
    TRAINER_ASSERT(count <= kMaxSetValues, "set_values: " << count << " values");
    kernels::SmallValues v{};
    for (std::size_t i = 0; i < count; ++i) v.values[i] = values[i];
    v.count = int(count);
    kernels::set_values(dst, v, as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void scale(float* x, float alpha, std::size_t count, Stream& s) override {
    kernels::scale(x, alpha, count, as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }

  // ---- convolution ----------------------------------------------------------
  void cache_filters16(const Filter* filters, std::size_t count, Stream& s) override {
    if (options_.precision == Precision::fp32 || !caches_filters16()) return;
    filter_cache_.cast(filters, count, format16(), as_cuda(s));
  }

  void conv2d_forward(ConstTensorView x, const float* w, TensorView y, const ConvGeometry& g,
                      Stream& s) override {
    const ConvProblem p = conv_problem(x.shape, y.shape, g);
    run_forward(p, {x.data, stored16(x.storage)}, w, {y.data, stored16(y.storage)}, s);
  }

  void conv2d_backward_data(ConstTensorView dy, const float* w, TensorView dx, const ConvGeometry& g,
                            Stream& s) override {
    const ConvProblem p = conv_problem(dx.shape, dy.shape, g);
    run_backward_data(p, w, {dy.data, stored16(dy.storage)}, {dx.data, stored16(dx.storage)}, s);
  }

  void conv2d_backward_weights(ConstTensorView x, ConstTensorView dy, float* dw,
                               const ConvGeometry& g, Stream& s) override {
    const ConvProblem p = conv_problem(x.shape, dy.shape, g);
    run_backward_filter(p, {x.data, stored16(x.storage)}, {dy.data, stored16(dy.storage)}, dw, s);
  }

  void conv2d_backward(ConstTensorView x, ConstTensorView dy, const float* w, float* dw, TensorView dx,
                       const ConvGeometry& g, Stream& s) override {
    const ConvProblem p = conv_problem(x.shape, dy.shape, g);
    if (p.precision == Precision::fp32 || !dx.data) {
      Backend::conv2d_backward(x, dy, w, dw, dx, g, s);
      return;
    }
    SHAPE_CHECK(dx.shape == x.shape, "conv2d_backward: dx " << dx.shape.str() << " is not x's shape " << x.shape.str());
    run_backward_both(p, {x.data, stored16(x.storage)}, w, {dy.data, stored16(dy.storage)}, dw,
                      {dx.data, stored16(dx.storage)}, s);
  }

  // ---- transposed convolution -------------------------------------------------
  // ConvTranspose2d(x) with IOHW weights [Cin, Cout, r, r] is the backward-data of
  // the convolution that maps y-shaped [N, Cout, Ho, Wo] to x-shaped [N, Cin, H, W]
  // with filter [K=Cin, C=Cout, r, r]: exactly the IOHW layout.
  void deconv2d_forward(ConstTensorView x, const float* w, const float* bias, TensorView y,
                        const ConvGeometry& g, Stream& s) override {
    const ConvProblem p = deconv_problem(x.shape, y.shape, g);
    run_backward_data(p, w, fp32_operand(x), fp32_operand(y), s);
    if (bias) {
      kernels::add_channel_bias(y.data, bias, y.shape.n, y.shape.c, int(y.shape.plane()),
                                as_cuda(s).get());
      CUDA_CHECK_LAUNCH();
    }
  }

  void deconv2d_backward_data(ConstTensorView dy, const float* w, TensorView dx,
                              const ConvGeometry& g, Stream& s) override {
    // The forward convolution of dy (y-shaped) with the same filter gives x-shaped dx.
    const ConvProblem p = deconv_problem(dx.shape, dy.shape, g);
    run_forward(p, fp32_operand(dy), w, fp32_operand(dx), s);
  }

  void deconv2d_backward_weights(ConstTensorView x, ConstTensorView dy, float* dw, float* dbias,
                                 const ConvGeometry& g, Stream& s) override {
    // Filter gradient of that convolution: its input is dy, its output gradient is x.
    const ConvProblem p = deconv_problem(x.shape, dy.shape, g);
    run_backward_filter(p, fp32_operand(dy), fp32_operand(x), dw, s);
    if (dbias) {
      auto& cs = as_cuda(s);
      double* scratch = channel_scratch(cs, dy.shape.c);
      kernels::channel_sum(dy.data, dbias, dy.shape.n, dy.shape.c, int(dy.shape.plane()), bn_kernels(), scratch,
                           cs.get());
      CUDA_CHECK_LAUNCH();
    }
  }

  // ---- batch norm ---------------------------------------------------------------
  void batchnorm_stats(ConstTensorView x, float* stats, Stream& s) override {
    auto& cs = as_cuda(s);
    if (stored16(x.storage)) {
      kernels::nhwc16_stats(bits(x), rows_of(x.shape), x.shape.c, format16(), bn_kernels(), stats,
                            sum_scratch(cs, x.shape), cs.get());
      CUDA_CHECK_LAUNCH();
      return;
    }
    double* scratch = channel_scratch(cs, x.shape.c);
    kernels::batchnorm_stats(x.data, x.shape.n, x.shape.c, int(x.shape.plane()), bn_kernels(), stats, scratch,
                             cs.get());
    CUDA_CHECK_LAUNCH();
  }
  void batchnorm_moments(ConstTensorView x, float* moments, Stream& s) override {
    statistics(x, kernels::BnFinalize{}, moments, s);
  }
  void batchnorm_local_statistics(ConstTensorView x, float* moments, float eps, float momentum, float* mean,
                                  float* invstd, float* running_mean, float* running_var, Stream& s) override {
    if (!folds_batchnorm_steps())
      return Backend::batchnorm_local_statistics(x, moments, eps, momentum, mean, invstd, running_mean, running_var,
                                                 s);
    statistics(x, kernels::BnFinalize{eps, momentum, mean, invstd, running_mean, running_var}, moments, s);
  }
  void batchnorm_finalize(const float* moments, int ranks, int channels, float eps, float momentum,
                          float* mean, float* invstd, float* running_mean, float* running_var,
                          Stream& s) override {
    TRAINER_ASSERT(ranks > 0, "batchnorm_finalize over no ranks");
    kernels::batchnorm_finalize(moments, ranks, channels, eps, momentum, mean, invstd, running_mean,
                                running_var, as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void batchnorm_inference_stats(const float* running_mean, const float* running_var, int channels,
                                 float eps, float* mean, float* invstd, Stream& s) override {
    kernels::batchnorm_inference_stats(running_mean, running_var, channels, eps, mean, invstd,
                                       as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void batchnorm_apply(ConstTensorView x, const float* mean, const float* invstd, const float* gamma,
                       const float* beta, TensorView y, Stream& s) override {
    SHAPE_CHECK(x.shape == y.shape, "batchnorm_apply shapes " << x.shape.str() << " vs " << y.shape.str());
    if (stored16(same_storage({x.storage, y.storage}))) {
      kernels::nhwc16_batchnorm_apply(bits(x), mean, invstd, gamma, beta, nullptr, /*relu=*/false, bits(y),
                                      rows_of(x.shape), x.shape.c, format16(), bn_kernels(),
                                      folds_batchnorm_steps(), coefficient_scratch(s, x.shape.c),
                                      as_cuda(s).get());
      CUDA_CHECK_LAUNCH();
      return;
    }
    kernels::batchnorm_apply(x.data, mean, invstd, gamma, beta, y.data, x.shape.n, x.shape.c,
                             int(x.shape.plane()), bn_kernels(), as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void batchnorm_backward_reduce(ConstTensorView dy, ConstTensorView x, const float* mean,
                                 float* reduce, Stream& s) override {
    backward_sums(dy, x, mean, nullptr, nullptr, nullptr, /*relu=*/false, kernels::BnParamGrads{}, reduce, s);
  }
  void batchnorm_backward_reduce_grads(ConstTensorView dy, ConstTensorView x, const float* mean, const float* invstd,
                                       const float* gamma, const float* beta, bool relu, float* reduce, float* dgamma,
                                       float* dbeta, Stream& s) override {
    if (!folds_batchnorm_steps())
      return Backend::batchnorm_backward_reduce_grads(dy, x, mean, invstd, gamma, beta, relu, reduce, dgamma, dbeta,
                                                      s);
    backward_sums(dy, x, mean, invstd, gamma, beta, relu, kernels::BnParamGrads{invstd, dgamma, dbeta}, reduce, s);
  }
  void batchnorm_param_grads(const float* reduce, const float* invstd, int channels, float* dgamma,
                             float* dbeta, Stream& s) override {
    kernels::batchnorm_param_grads(reduce, invstd, channels, dgamma, dbeta, as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void batchnorm_backward_apply(ConstTensorView dy, ConstTensorView x, const float* mean,
                                const float* invstd, const float* gamma, const float* reduce,
                                double count, TensorView dx, Stream& s) override {
    SHAPE_CHECK(x.shape == dy.shape && x.shape == dx.shape, "batchnorm_backward_apply shapes");
    if (stored16(same_storage({dy.storage, x.storage, dx.storage}))) {
      kernels::nhwc16_batchnorm_backward_apply(bits(dy), bits(x), mean, invstd, gamma, nullptr, reduce, count,
                                               /*relu=*/false, bits(dx), rows_of(x.shape), x.shape.c, format16(),
                                               bn_kernels(), folds_batchnorm_steps(),
                                               coefficient_scratch(s, x.shape.c), as_cuda(s).get());
      CUDA_CHECK_LAUNCH();
      return;
    }
    kernels::batchnorm_backward_apply(dy.data, x.data, mean, invstd, gamma, reduce, count, dx.data,
                                      x.shape.n, x.shape.c, int(x.shape.plane()), bn_kernels(), as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void batchnorm_apply_relu(ConstTensorView x, const float* mean, const float* invstd, const float* gamma,
                            const float* beta, const float* residual, TensorView y, Stream& s) override {
    SHAPE_CHECK(x.shape == y.shape, "batchnorm_apply_relu shapes " << x.shape.str() << " vs " << y.shape.str());
    if (stored16(same_storage({x.storage, y.storage}))) {
      kernels::nhwc16_batchnorm_apply(bits(x), mean, invstd, gamma, beta, reinterpret_cast<const std::uint16_t*>(residual),
                                      /*relu=*/true, bits(y), rows_of(x.shape), x.shape.c, format16(), bn_kernels(),
                                      folds_batchnorm_steps(), coefficient_scratch(s, x.shape.c), as_cuda(s).get());
      CUDA_CHECK_LAUNCH();
      return;
    }
    kernels::batchnorm_apply_relu(x.data, mean, invstd, gamma, beta, residual, y.data, x.shape.n, x.shape.c,
                                  int(x.shape.plane()), bn_kernels(), as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void batchnorm_relu_backward_reduce(ConstTensorView dy, ConstTensorView x, const float* mean, const float* invstd,
                                      const float* gamma, const float* beta, float* reduce, Stream& s) override {
    backward_sums(dy, x, mean, invstd, gamma, beta, /*relu=*/true, kernels::BnParamGrads{}, reduce, s);
  }
  void batchnorm_relu_backward_apply(ConstTensorView dy, ConstTensorView x, const float* mean, const float* invstd,
                                     const float* gamma, const float* beta, const float* reduce, double count,
                                     TensorView dx, Stream& s) override {
    SHAPE_CHECK(x.shape == dy.shape && x.shape == dx.shape, "batchnorm_relu_backward_apply shapes");
    if (stored16(same_storage({dy.storage, x.storage, dx.storage}))) {
      kernels::nhwc16_batchnorm_backward_apply(bits(dy), bits(x), mean, invstd, gamma, beta, reduce, count,
                                               /*relu=*/true, bits(dx), rows_of(x.shape), x.shape.c, format16(),
                                               bn_kernels(), folds_batchnorm_steps(),
                                               coefficient_scratch(s, x.shape.c), as_cuda(s).get());
      CUDA_CHECK_LAUNCH();
      return;
    }
    kernels::batchnorm_relu_backward_apply(dy.data, x.data, mean, invstd, gamma, beta, reduce, count, dx.data,
                                           x.shape.n, x.shape.c, int(x.shape.plane()), bn_kernels(), as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }

  // ---- pooling and elementwise ----------------------------------------------------
  void maxpool2d_forward(ConstTensorView x, TensorView y, const PoolGeometry& g, Stream& s) override {
    if (stored16(same_storage({x.storage, y.storage}))) {
      kernels::nhwc16_maxpool_forward(bits(x), bits(y), pool_shape(x.shape, y.shape, g), format16(), as_cuda(s).get());
      CUDA_CHECK_LAUNCH();
      return;
    }
    kernels::maxpool2d_forward(x.data, y.data, pool_shape(x.shape, y.shape, g), as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void maxpool2d_backward(ConstTensorView x, ConstTensorView dy, TensorView dx, const PoolGeometry& g,
                          Stream& s) override {
    SHAPE_CHECK(x.shape == dx.shape, "maxpool2d_backward shapes");
    auto* argmax = static_cast<int*>(as_cuda(s).scratch(dy.shape.numel() * sizeof(int)));
    if (stored16(same_storage({x.storage, dy.storage, dx.storage}))) {
      kernels::nhwc16_maxpool_backward(bits(x), bits(dy), bits(dx), argmax, pool_shape(x.shape, dy.shape, g),
                                       format16(), as_cuda(s).get());
      CUDA_CHECK_LAUNCH();
      return;
    }
    kernels::maxpool2d_backward(x.data, dy.data, dx.data, argmax, pool_shape(x.shape, dy.shape, g),
                                as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void relu_forward(const float* x, float* y, std::size_t count, Stream& s) override {
    kernels::relu_forward(x, y, count, as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void relu_backward(const float* y, const float* dy, float* dx, std::size_t count,
                     Stream& s) override {
    kernels::relu_backward(y, dy, dx, count, as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void add_relu_forward(const float* a, const float* b, float* y, std::size_t count,
                        Stream& s) override {
    kernels::add_relu_forward(a, b, y, count, as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void accumulate(const float* x, float* out, std::size_t count, Stream& s) override {
    // Our float4 pass (kernels/elementwise.cu), not cuBLAS's saxpy (out = 1 * x + out,
    // the same sums), as the other fp32 element-wise passes.
    kernels::accumulate(x, out, count, as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void convert_storage(ConstTensorView src, TensorView dst, Stream& s) override {
    SHAPE_CHECK(src.shape == dst.shape, "convert_storage shapes " << src.shape.str() << " -> " << dst.shape.str());
    const bool from16 = stored16(src.storage), to16 = stored16(dst.storage);
    const kernels::Dims4 d{src.shape.n, src.shape.c, src.shape.h, src.shape.w};
    if (from16 == to16) {
      const std::size_t bytes = src.shape.numel() * (from16 ? 2 : 4);
      if (bytes && src.data != dst.data)
        CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, bytes, cudaMemcpyDeviceToDevice, as_cuda(s).get()));
      return;
    }
    if (to16) kernels::cast_to_16(src.data, bits(dst), d, format16(), /*nhwc=*/true, as_cuda(s).get());
    else kernels::cast_from_16(bits(src), dst.data, d, format16(), /*nhwc=*/true, as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void accumulate_tensor(ConstTensorView x, TensorView out, Stream& s) override {
    SHAPE_CHECK(x.shape == out.shape, "accumulate_tensor shapes");
    if (!stored16(same_storage({x.storage, out.storage}))) return accumulate(x.data, out.data, x.shape.numel(), s);
    kernels::nhwc16_accumulate(bits(x), bits(out), x.shape.numel(), format16(), as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void relu_backward_tensor(ConstTensorView y, ConstTensorView dy, TensorView dx, Stream& s) override {
    SHAPE_CHECK(y.shape == dy.shape && y.shape == dx.shape, "relu_backward_tensor shapes");
    if (!stored16(same_storage({y.storage, dy.storage, dx.storage})))
      return relu_backward(y.data, dy.data, dx.data, dy.shape.numel(), s);
    kernels::nhwc16_relu_backward(bits(y), bits(dy), bits(dx), dy.shape.numel(), format16(), as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void affine_points(float* xy, std::size_t points, const float* map, Stream& s) override {
    kernels::affine_points(xy, points, map, as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void pixel_shuffle_forward(ConstTensorView x, TensorView y, int factor, Stream& s) override {
    SHAPE_CHECK(x.shape.c == y.shape.c * factor * factor && y.shape.h == x.shape.h * factor &&
                    y.shape.w == x.shape.w * factor && x.shape.n == y.shape.n,
                "pixel_shuffle_forward shapes " << x.shape.str() << " -> " << y.shape.str());
    kernels::pixel_shuffle_forward(x.data, y.data, x.shape.n, y.shape.c, x.shape.h, x.shape.w,
                                   factor, as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void pixel_shuffle_backward(ConstTensorView dy, TensorView dx, int factor, Stream& s) override {
    SHAPE_CHECK(dx.shape.c == dy.shape.c * factor * factor && dy.shape.h == dx.shape.h * factor &&
                    dy.shape.w == dx.shape.w * factor && dx.shape.n == dy.shape.n,
                "pixel_shuffle_backward shapes " << dy.shape.str() << " -> " << dx.shape.str());
    kernels::pixel_shuffle_backward(dy.data, dx.data, dx.shape.n, dy.shape.c, dx.shape.h,
                                    dx.shape.w, factor, as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }

  // ---- input and heatmap ops ------------------------------------------------------
  void normalize_images(const std::uint8_t* src, int in_channels, TensorView dst,
                        const float mean[3], const float std[3], Stream& s) override {
    SHAPE_CHECK((in_channels == 1 || in_channels == 3) && dst.shape.c == 3,
                "normalize_images: in_channels " << in_channels << ", dst " << dst.shape.str());
    auto& cs = as_cuda(s);
    const std::size_t bytes = std::size_t(dst.shape.n) * dst.shape.plane() * in_channels;
    const auto* dev_src = static_cast<const std::uint8_t*>(on_device(src, bytes, cs));
    kernels::Normalization norm{{mean[0], mean[1], mean[2]}, {std[0], std[1], std[2]}};
    kernels::normalize_images(dev_src, in_channels, dst.data, dst.shape.n, dst.shape.h,
                              dst.shape.w, norm, cs.get());
    CUDA_CHECK_LAUNCH();
  }

  void heatmap_targets(const float* keypoints, TensorView targets, float sigma, float* mask,
                       Stream& s) override {
    auto& cs = as_cuda(s);
    const int planes = targets.shape.n * targets.shape.c;
    const auto* dev_kp =
        static_cast<const float*>(on_device(keypoints, std::size_t(planes) * 2 * sizeof(float), cs));
    kernels::heatmap_targets(dev_kp, planes, targets.shape.h, targets.shape.w, sigma, targets.data,
                             mask, cs.get());
    CUDA_CHECK_LAUNCH();
  }

  void spatial_softmax_forward(ConstTensorView x, float temperature, TensorView y,
                               Stream& s) override {
    SHAPE_CHECK(x.shape == y.shape, "spatial_softmax_forward shapes");
    kernels::spatial_softmax_forward(x.data, x.shape.n * x.shape.c, int(x.shape.plane()),
                                     temperature, y.data, as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void spatial_softmax_backward(ConstTensorView y, ConstTensorView dy, float temperature,
                                TensorView dx, Stream& s) override {
    SHAPE_CHECK(y.shape == dy.shape && y.shape == dx.shape, "spatial_softmax_backward shapes");
    kernels::spatial_softmax_backward(y.data, dy.data, y.shape.n * y.shape.c, int(y.shape.plane()),
                                      temperature, dx.data, as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }

  void heatmap_loss(ConstTensorView pred, ConstTensorView target, const float* mask,
                    const HeatmapLoss& type, float* loss, float* dpred, float loss_scale,
                    Stream& s) override {
    SHAPE_CHECK(pred.shape == target.shape, "heatmap_loss shapes");
    auto& cs = as_cuda(s);
    const int planes = pred.shape.n * pred.shape.c;
    auto* scratch =
        static_cast<double*>(cs.scratch(kernels::heatmap_loss_scratch_doubles(planes) * sizeof(double)));
    const int plane_size = int(pred.shape.plane());
    double* sums = kernels::loss_scratch_sums(scratch, planes);
    kernels::count_loss_planes(mask, target.data, planes, plane_size, scratch, cs.get());
    type.planes_cuda({pred.data, target.data, scratch, planes, plane_size, dpred, loss_scale, sums},
                     cs.get());
    kernels::heatmap_loss_total(sums, scratch, planes, loss, cs.get());
    CUDA_CHECK_LAUNCH();
  }

  // The soft-argmax works through the planes in chunks whose upsampled maps fit
  // 64 MiB of the stream's scratch (kernels/heatmap.cuh), so the scratch does not
  // grow with the batch; no host wait.
  void soft_argmax(ConstTensorView heatmaps, int downsample_factor, float temperature, float* coords,
                   float* confidence, Stream& s) override {
    TRAINER_ASSERT(downsample_factor >= 0 && downsample_factor <= 5,
                   "soft_argmax: downsample_factor " << downsample_factor);
    auto& cs = as_cuda(s);
    const int planes = heatmaps.shape.n * heatmaps.shape.c, h = heatmaps.shape.h, w = heatmaps.shape.w;
    if (planes == 0) return;
    const int chunk = kernels::soft_argmax_chunk_planes(planes, h, w, downsample_factor);
    auto* scratch = static_cast<float*>(
        cs.scratch(kernels::soft_argmax_scratch_floats(chunk, h, w, downsample_factor) * sizeof(float)));
    kernels::soft_argmax(heatmaps.data, planes, h, w, downsample_factor, temperature, coords, confidence, chunk,
                         scratch, cs.get());
    CUDA_CHECK_LAUNCH();
  }

  void soft_argmax_backward(ConstTensorView heatmaps, int downsample_factor, float temperature,
                            const float* dcoords, TensorView dheatmaps, Stream& s) override {
    TRAINER_ASSERT(downsample_factor >= 0 && downsample_factor <= 5,
                   "soft_argmax_backward: downsample_factor " << downsample_factor);
    SHAPE_CHECK(heatmaps.shape == dheatmaps.shape, "soft_argmax_backward shapes");
    auto& cs = as_cuda(s);
    const int planes = heatmaps.shape.n * heatmaps.shape.c, h = heatmaps.shape.h, w = heatmaps.shape.w;
    if (planes == 0) return;
    const int chunk = kernels::soft_argmax_chunk_planes(planes, h, w, downsample_factor);
    auto* scratch = static_cast<float*>(
        cs.scratch(kernels::soft_argmax_scratch_floats(chunk, h, w, downsample_factor) * sizeof(float)));
    kernels::soft_argmax_backward(heatmaps.data, planes, h, w, downsample_factor, temperature, dcoords,
                                  dheatmaps.data, chunk, scratch, cs.get());
    CUDA_CHECK_LAUNCH();
  }

  // ---- optimizer -----------------------------------------------------------------
  void adam_update(float* params, const float* grads, float* m, float* v, std::size_t count,
                   const AdamParams& p, Stream& s) override {
    kernels::adam_update(params, grads, m, v, count, adam_step(p), as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
    filter_cache_.invalidate();  // the parameters change: the next forward casts them again
  }
  void count_adam_step(float* step, float* factors, const float* lr, const AdamParams& p, Stream& s) override {
    kernels::count_adam_step(step, factors, lr, adam_step(p), as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  static kernels::AdamStep adam_step(const AdamParams& p) {
    return kernels::AdamStep{p.lr,           p.beta1,                  p.beta2, p.eps,           p.weight_decay,
                             p.decoupled_weight_decay, p.step, p.device_factors, p.skip};
  }

  // ---- mixed precision -------------------------------------------------------------
  void unscale_and_check(float* grads, std::size_t count, const float* inv_scale, float* found_inf,
                         Stream& s) override {
    kernels::unscale_and_check(grads, count, inv_scale, found_inf, as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void update_loss_scale(float* state, const LossScaleRule& rule, Stream& s) override {
    kernels::update_loss_scale(state, rule, as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void scale_by(float* x, std::size_t count, const float* factor, Stream& s) override {
    kernels::scale_by(x, factor, count, as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }

  // ---- unsupervised keypoint losses ------------------------------------------------
  void temporal_loss(const float* keypoints, const float* confidence, int frames, int num_keypoints,
                     const float* epsilon, float prob_threshold, float scale_x, float scale_y,
                     float* loss, float* dkeypoints, float grad_scale, Stream& s) override {
    SHAPE_CHECK(frames >= 1 && num_keypoints >= 1,
                "temporal_loss: " << frames << " frames, " << num_keypoints << " keypoints");
    kernels::temporal_loss(keypoints, confidence, frames, num_keypoints, epsilon, prob_threshold,
                           scale_x, scale_y, loss, dkeypoints, grad_scale, as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void pca_loss(const float* keypoints, int frames, int num_keypoints, const PcaLossTables& tables,
                float scale_x, float scale_y, float* loss, float* dkeypoints, float grad_scale,
                Stream& s) override {
    SHAPE_CHECK(frames >= 1 && num_keypoints == tables.num_keypoints && tables.rows_per_frame >= 1 &&
                    tables.dims >= 2 && tables.dims % 2 == 0 && tables.num_components >= 0 &&
                    tables.num_components <= tables.dims,
                "pca_loss: " << frames << " frames, " << num_keypoints << " keypoints; tables for "
                             << tables.num_keypoints << " keypoints, " << tables.rows_per_frame
                             << " rows of " << tables.dims << ", " << tables.num_components
                             << " components");
    auto& cs = as_cuda(s);
    auto* scratch = static_cast<double*>(
        cs.scratch(kernels::pca_loss_scratch_doubles(frames, tables) * sizeof(double)));
    kernels::pca_loss(keypoints, frames, num_keypoints, tables, scale_x, scale_y, loss, dkeypoints,
                      grad_scale, scratch, cs.get());
    CUDA_CHECK_LAUNCH();
  }

 private:
  ConvProblem conv_problem(const Shape4& x, const Shape4& y, const ConvGeometry& g) const {
    return cuda::conv2d_problem(x, y, g, options_.precision);
  }
  // The convolution whose backward-data is the transposed convolution x -> y.
  ConvProblem deconv_problem(const Shape4& x, const Shape4& y, const ConvGeometry& g) const {
    return cuda::deconv2d_problem(x, y, g, options_.precision);
  }
  static kernels::PoolShape pool_shape(const Shape4& x, const Shape4& y, const PoolGeometry& g) {
    SHAPE_CHECK(x.n == y.n && x.c == y.c && y.h == g.out(x.h) && y.w == g.out(x.w),
                "maxpool shapes " << x.str() << " -> " << y.str() << " disagree with the geometry");
    return kernels::PoolShape{x.n, x.c, x.h, x.w, y.h, y.w, g.kernel, g.stride, g.pad};
  }

  // ---- 16-bit storage ---------------------------------------------------------------
  // Whether a view is in 16-bit storage; only the precision's own 16-bit NHWC is.
  bool stored16(Storage storage) const {
    SHAPE_CHECK(!is_16bit(storage) || storage == storage_16bit_of(options_.precision),
                storage_name(storage) << " storage in precision " << precision_name(options_.precision));
    return is_16bit(storage);
  }
  // The one storage of an op's views (they must agree).
  static Storage same_storage(std::initializer_list<Storage> storages) {
    const Storage first = *storages.begin();
    for (Storage s : storages) SHAPE_CHECK(s == first, "views in " << storage_name(first) << " and " << storage_name(s));
    return first;
  }
  static const std::uint16_t* bits(ConstTensorView v) { return reinterpret_cast<const std::uint16_t*>(v.data); }
  static std::uint16_t* bits(TensorView v) { return reinterpret_cast<std::uint16_t*>(v.data); }
  static std::size_t rows_of(const Shape4& d) { return std::size_t(d.n) * d.h * d.w; }
  // The fp32 per-channel sums' partials (kernels/batchnorm.cuh) for c channels.
  static double* channel_scratch(cuda::CudaStream& cs, int c) {
    return static_cast<double*>(cs.scratch(kernels::batchnorm_scratch_doubles(c) * sizeof(double)));
  }
  static double* sum_scratch(cuda::CudaStream& cs, const Shape4& d) {
    return static_cast<double*>(cs.scratch(kernels::nhwc16_scratch_doubles(rows_of(d), d.c) * sizeof(double)));
  }
  static float* coefficient_scratch(Stream& s, int c) {
    return static_cast<float*>(as_cuda(s).scratch(kernels::nhwc16_coefficient_floats(c) * sizeof(float)));
  }

  // ---- convolutions ------------------------------------------------------------------
  // The three cuDNN calls of problem p (x [n,c,h,w] * w [k,c,r,r] -> y [n,k,oh,ow]).
  // Activations (x, y and their gradients) come as ConvTensor: fp32 NCHW, or already
  // in the precision's 16-bit NHWC storage. Weights are fp32 OIHW. In fp32 cuDNN
  // reads and writes the fp32 tensors directly. In bf16 / fp16 ("autocast at the
  // convolution boundary") cuDNN convolves 16-bit NHWC operands with fp32
  // accumulation into a 16-bit NHWC result: an fp32 operand is cast into a 16-bit
  // copy first and an fp32 result is cast back from one, while a tensor in 16-bit
  // storage is used in place (no cast: the point of 16-bit storage). The copies and
  // the workspace share one carve of the stream's scratch. CPU twin: the rounding
  // emulation in cpu_conv.cpp.
  struct ConvTensor {
    const float* data = nullptr;
    bool is16 = false;
  };
  static ConvTensor fp32_operand(ConstTensorView v) {
    SHAPE_CHECK(!is_16bit(v.storage), "transposed convolutions take fp32 tensors, not " << storage_name(v.storage));
    return {v.data, false};
  }
  static const std::uint16_t* as16(const ConvTensor& t) { return reinterpret_cast<const std::uint16_t*>(t.data); }
  static std::uint16_t* as16_out(const ConvTensor& t) {
    return reinterpret_cast<std::uint16_t*>(const_cast<float*>(t.data));
  }
  static float* as_out(const ConvTensor& t) { return const_cast<float*>(t.data); }

  struct Carve16 {
    std::uint16_t* a = nullptr;  // first operand's copy
    std::uint16_t* b = nullptr;  // second operand's copy
    std::uint16_t* out = nullptr;
    void* ws = nullptr;
  };
  static std::size_t aligned(std::size_t bytes) { return (bytes + 255) / 256 * 256; }
  // Element counts of the copies needed (0: none) and the workspace bytes.
  static Carve16 carve16(Stream& s, std::size_t a, std::size_t b, std::size_t out, std::size_t ws) {
    const std::size_t sa = aligned(a * 2), sb = aligned(b * 2), so = aligned(out * 2);
    auto* base = static_cast<char*>(as_cuda(s).scratch(sa + sb + so + ws));
    return Carve16{reinterpret_cast<std::uint16_t*>(base), reinterpret_cast<std::uint16_t*>(base + sa),
                   reinterpret_cast<std::uint16_t*>(base + sa + sb), ws ? base + sa + sb + so : nullptr};
  }
  kernels::Format16 format16() const {
    return options_.precision == Precision::fp16 ? kernels::Format16::fp16 : kernels::Format16::bf16;
  }
  kernels::BnKernels bn_kernels() const {
    if (!tiled_batchnorm()) return kernels::BnKernels::flat;
    return wide_sum_blocks16() ? kernels::BnKernels::tiled : kernels::BnKernels::tiled_lane_rows;
  }
  // batchnorm_moments, and with `finalize` set batchnorm_local_statistics's folded
  // statistics (kernels/batchnorm.cuh).
  void statistics(ConstTensorView x, const kernels::BnFinalize& finalize, float* moments, Stream& s) {
    auto& cs = as_cuda(s);
    if (stored16(x.storage)) {
      kernels::nhwc16_local_statistics(bits(x), rows_of(x.shape), x.shape.c, format16(), bn_kernels(), finalize,
                                       moments, sum_scratch(cs, x.shape), cs.get());
      CUDA_CHECK_LAUNCH();
      return;
    }
    kernels::batchnorm_local_statistics(x.data, x.shape.n, x.shape.c, int(x.shape.plane()), bn_kernels(), finalize,
                                        moments, channel_scratch(cs, x.shape.c), cs.get());
    CUDA_CHECK_LAUNCH();
  }
  // The backward reduce, plain or through the ReLU (which needs invstd, gamma and
  // beta), with `grads` folded into its last kernel where it has outputs.
  void backward_sums(ConstTensorView dy, ConstTensorView x, const float* mean, const float* invstd,
                     const float* gamma, const float* beta, bool relu, const kernels::BnParamGrads& grads,
                     float* reduce, Stream& s) {
    SHAPE_CHECK(x.shape == dy.shape, "batchnorm backward reduce shapes " << dy.shape.str() << " vs " << x.shape.str());
    auto& cs = as_cuda(s);
    if (stored16(same_storage({dy.storage, x.storage}))) {
      kernels::nhwc16_batchnorm_backward_reduce(bits(dy), bits(x), mean, invstd, gamma, beta, relu, rows_of(x.shape),
                                                x.shape.c, format16(), bn_kernels(), grads, reduce,
                                                sum_scratch(cs, x.shape), cs.get());
      CUDA_CHECK_LAUNCH();
      return;
    }
    double* scratch = channel_scratch(cs, x.shape.c);
    const int n = x.shape.n, c = x.shape.c, plane = int(x.shape.plane());
    if (relu)
      kernels::batchnorm_relu_backward_reduce(dy.data, x.data, mean, invstd, gamma, beta, n, c, plane, bn_kernels(),
                                              grads, reduce, scratch, cs.get());
    else
      kernels::batchnorm_backward_reduce(dy.data, x.data, mean, n, c, plane, bn_kernels(), grads, reduce, scratch,
                                         cs.get());
    CUDA_CHECK_LAUNCH();
  }
  static kernels::Dims4 x_dims(const ConvProblem& p) { return {p.n, p.c, p.h, p.w}; }
  static kernels::Dims4 w_dims(const ConvProblem& p) { return {p.k, p.c, p.r, p.r}; }
  static kernels::Dims4 y_dims(const ConvProblem& p) { return {p.n, p.k, p.oh, p.ow}; }
  void to16(const float* src, std::uint16_t* dst, kernels::Dims4 d, Stream& s) {
    kernels::cast_to_16(src, dst, d, format16(), /*nhwc=*/true, as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  void from16(const std::uint16_t* src, float* dst, kernels::Dims4 d, Stream& s) {
    kernels::cast_from_16(src, dst, d, format16(), /*nhwc=*/true, as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  // A 16-bit KRSC weight gradient into the fp32 OIHW parameters' gradient.
  void filter_from16(const std::uint16_t* src, float* dw, const ConvProblem& p, Stream& s) {
    kernels::cast_filter_from_16(src, dw, p.k, p.c, p.r * p.r, format16(), as_cuda(s).get());
    CUDA_CHECK_LAUNCH();
  }
  // The 16-bit operand cuDNN reads: t itself in 16-bit storage, else its cast into `copy`.
  const std::uint16_t* operand16(const ConvTensor& t, std::uint16_t* copy, kernels::Dims4 d, Stream& s) {
    if (t.is16) return as16(t);
    to16(t.data, copy, d, s);
    return copy;
  }
  static std::size_t copy_size(const ConvTensor& t, kernels::Dims4 d) { return t.is16 ? 0 : d.numel(); }
  // The 16-bit filter cuDNN reads: the copy cache_filters16 made, else w cast into `copy`.
  const std::uint16_t* filter16(const float* w, std::uint16_t* copy, const ConvProblem& p, Stream& s) {
    if (const std::uint16_t* cached = filter_cache_.find(w, p.k, p.c, p.r)) return cached;
    to16(w, copy, w_dims(p), s);
    return copy;
  }
  void require_fp32(std::initializer_list<ConvTensor> tensors) const {
    for (const ConvTensor& t : tensors) SHAPE_CHECK(!t.is16, "16-bit storage in an fp32 convolution");
  }

  // y = forward(x, w) of problem p.
  void run_forward(const ConvProblem& p, ConvTensor x, const float* w, ConvTensor y, Stream& s) {
    cudnnHandle_t h = cudnn_on(s);
    const std::size_t ws_bytes = convs_.prepare(h, p, ConvPass::forward);
    if (p.precision == Precision::fp32) {
      require_fp32({x, y});
      convs_.run(h, p, ConvPass::forward, x.data, w, as_out(y), workspace(s, ws_bytes), ws_bytes);
      return;
    }
    const Carve16 c = carve16(s, copy_size(x, x_dims(p)), w_dims(p).numel(), copy_size(y, y_dims(p)), ws_bytes);
    const std::uint16_t* x16 = operand16(x, c.a, x_dims(p), s);
    const std::uint16_t* w16 = filter16(w, c.b, p, s);
    std::uint16_t* y16 = y.is16 ? as16_out(y) : c.out;
    convs_.run(h, p, ConvPass::forward, x16, w16, y16, c.ws, ws_bytes);
    if (!y.is16) from16(c.out, as_out(y), y_dims(p), s);
  }

  // dx = backward-data(w, dy) of problem p (x-shaped output, y-shaped input).
  void run_backward_data(const ConvProblem& p, const float* w, ConvTensor dy, ConvTensor dx, Stream& s) {
    cudnnHandle_t h = cudnn_on(s);
    const std::size_t ws_bytes = convs_.prepare(h, p, ConvPass::backward_data);
    if (p.precision == Precision::fp32) {
      require_fp32({dy, dx});
      convs_.run(h, p, ConvPass::backward_data, dy.data, w, as_out(dx), workspace(s, ws_bytes), ws_bytes);
      return;
    }
    const Carve16 c = carve16(s, copy_size(dy, y_dims(p)), w_dims(p).numel(), copy_size(dx, x_dims(p)), ws_bytes);
    const std::uint16_t* dy16 = operand16(dy, c.a, y_dims(p), s);
    const std::uint16_t* w16 = filter16(w, c.b, p, s);
    std::uint16_t* dx16 = dx.is16 ? as16_out(dx) : c.out;
    convs_.run(h, p, ConvPass::backward_data, dy16, w16, dx16, c.ws, ws_bytes);
    if (!dx.is16) from16(c.out, as_out(dx), x_dims(p), s);
  }

  // dw = backward-filter(x, dy) of problem p.
  void run_backward_filter(const ConvProblem& p, ConvTensor x, ConvTensor dy, float* dw, Stream& s) {
    cudnnHandle_t h = cudnn_on(s);
    const std::size_t ws_bytes = convs_.prepare(h, p, ConvPass::backward_filter);
    if (p.precision == Precision::fp32) {
      require_fp32({x, dy});
      convs_.run(h, p, ConvPass::backward_filter, x.data, dy.data, dw, workspace(s, ws_bytes), ws_bytes);
      return;
    }
    const Carve16 c = carve16(s, copy_size(x, x_dims(p)), copy_size(dy, y_dims(p)), w_dims(p).numel(), ws_bytes);
    const std::uint16_t* x16 = operand16(x, c.a, x_dims(p), s);
    const std::uint16_t* dy16 = operand16(dy, c.b, y_dims(p), s);
    convs_.run(h, p, ConvPass::backward_filter, x16, dy16, c.out, c.ws, ws_bytes);
    filter_from16(c.out, dw, p, s);
  }

  // 16-bit only: dw = backward-filter(x, dy), then dx = backward-data(w, dy), with
  // dy cast once for both (the calls and casts of run_backward_filter and
  // run_backward_data otherwise, so the results are the same bits). One carve:
  // dy16 | x16 | w16 | out (the larger of x and w; dw's result, then dx's) | workspace,
  // where tensors in 16-bit storage need no copy.
  void run_backward_both(const ConvProblem& p, ConvTensor x, const float* w, ConvTensor dy, float* dw, ConvTensor dx,
                         Stream& s) {
    cudnnHandle_t h = cudnn_on(s);
    const std::size_t filter_bytes = convs_.prepare(h, p, ConvPass::backward_filter);
    const std::size_t data_bytes = convs_.prepare(h, p, ConvPass::backward_data);
    const std::size_t nx = x_dims(p).numel(), nw = w_dims(p).numel();
    const std::size_t sy = aligned(copy_size(dy, y_dims(p)) * 2), sx = aligned(copy_size(x, x_dims(p)) * 2),
                      sw = aligned(nw * 2), so = aligned((dx.is16 ? nw : std::max(nx, nw)) * 2);
    const std::size_t ws_bytes = std::max(filter_bytes, data_bytes);
    auto* base = static_cast<char*>(as_cuda(s).scratch(sy + sx + sw + so + ws_bytes));
    auto* dy_copy = reinterpret_cast<std::uint16_t*>(base);
    auto* x_copy = reinterpret_cast<std::uint16_t*>(base + sy);
    auto* w_copy = reinterpret_cast<std::uint16_t*>(base + sy + sx);
    auto* out = reinterpret_cast<std::uint16_t*>(base + sy + sx + sw);
    void* ws = ws_bytes ? base + sy + sx + sw + so : nullptr;
    const std::uint16_t* x16 = operand16(x, x_copy, x_dims(p), s);
    const std::uint16_t* dy16 = operand16(dy, dy_copy, y_dims(p), s);
    convs_.run(h, p, ConvPass::backward_filter, x16, dy16, out, ws, filter_bytes);
    filter_from16(out, dw, p, s);
    const std::uint16_t* w16 = filter16(w, w_copy, p, s);
    std::uint16_t* dx16 = dx.is16 ? as16_out(dx) : out;
    convs_.run(h, p, ConvPass::backward_data, dy16, w16, dx16, ws, data_bytes);
    if (!dx.is16) from16(out, as_out(dx), x_dims(p), s);
  }

  cudnnHandle_t cudnn_on(Stream& s) {
    CUDNN_CHECK(cudnnSetStream(*cudnn_, as_cuda(s).get()));
    return *cudnn_;
  }
  static void* workspace(Stream& s, std::size_t bytes) {
    return bytes ? as_cuda(s).scratch(bytes) : nullptr;
  }

  // `p` itself when kernels can read it, else a copy in the stream's scratch.
  // The copy is enqueued on the stream, so the host buffer must stay unchanged
  // until the stream has passed this op (as for upload()).
  static const void* on_device(const void* p, std::size_t bytes, cuda::CudaStream& s) {
    if (bytes == 0 || device_accessible(p)) return p;
    void* staged = s.scratch(bytes);
    CUDA_CHECK(cudaMemcpyAsync(staged, p, bytes, cudaMemcpyHostToDevice, s.get()));
    return staged;
  }

  int device_;
  CudaBackendOptions options_;
  cudaDeviceProp props_{};
  std::atomic<std::uint64_t> released_blocks_{0};
  std::unique_ptr<cuda::CudaStream> default_stream_;
  std::unique_ptr<cuda::CudnnHandle> cudnn_;
  cuda::ConvRunner convs_;
  cuda::FilterCache filter_cache_{*this};
  cuda::CudaMbConvOps mbconv_ops_;
  cuda::CudaTransformerOps transformer_ops_{options_.allow_tf32, options_.precision,
                                            options_.vit_bias_epilogue};  // after options_: reads it
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(int device_ordinal, const CudaBackendOptions& options) {
  return std::make_unique<CudaBackend>(device_ordinal, options);
}

bool cudnn_graph_api_built() { return cuda::cudnn_graph_api_built(); }

std::unique_ptr<Backend> make_cuda_backend(int device_ordinal, Precision precision) {
  CudaBackendOptions options;
  options.precision = precision;
  return make_cuda_backend(device_ordinal, options);
}

}  // namespace trainer::compute
