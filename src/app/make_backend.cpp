// Backend construction for the commands (see make_backend.hpp).
#include "app/make_backend.hpp"

#include "compute/precision.hpp"  // compute::parse_precision
#ifdef TRAINER_WITH_CUDA
#include "compute/cuda/cuda_backend.hpp"  // CudaBackendOptions (TF32)
#endif
#include "runtime/visible_gpus.hpp"  // runtime::visible_gpu_count
#include "util/env.hpp"              // capture_environment, env_get
#include "util/error.hpp"            // UserError

namespace trainer::app {

std::string cpu_precision_warning(const std::string& precision) {
  return "precision " + precision +
         " on CPU emulates the 16-bit rounding of the GPU path in fp32: same numerics, no speed-up";
}

namespace {
// A switch between a new path (1 or unset) and the one that ran before (0).
bool on_unless_zero(const Env& env, const char* name, const std::string& hint) {
  const std::string value = env_get(env, name).value_or("");
  if (value.empty() || value == "1") return true;
  if (value == "0") return false;
  throw UserError(std::string(name) + " must be 0 or 1, not '" + value + "'", hint);
}
}  // namespace

bool fused_norm_from_env(const Env& env) {
  return on_unless_zero(env, "TRAINER_FUSED_NORM",
                        "0 runs batch norm, residual add and ReLU as separate ops (the path of 2026-11-22); unset it "
                        "for the fused ops");
}

Nhwc16Choice nhwc16_from_env(const Env& env) {
  const std::string value = env_get(env, "TRAINER_NHWC16").value_or("");
  if (value.empty()) return Nhwc16Choice::device_default;
  if (value == "1") return Nhwc16Choice::on;
  if (value == "0") return Nhwc16Choice::off;
  throw UserError("TRAINER_NHWC16 must be 0 or 1, not '" + value + "'",
                  "0 keeps fp32 activations with a cast at every convolution (the path measured on 2026-11-26); 1 "
                  "keeps 16-bit NHWC activations in bf16-mixed / 16-mixed, also on CPUs (emulated); unset: on GPUs");
}

bool filter_cache_from_env(const Env& env) {
  return on_unless_zero(env, "TRAINER_FILTER_CACHE",
                        "0 casts each convolution's filter to 16 bits at every use (the path before 2026-11-27); "
                        "unset it for one cast of every filter per forward");
}

bool tiled_batchnorm_from_env(const Env& env) {
  return on_unless_zero(env, "TRAINER_BN_KERNELS",
                        "0 runs the batch-norm kernels an H200 ran on 2026-11-27 and 28 (one value or value group per "
                        "thread, one block per image plane of a channel for fp32's sums); unset it for the tiled "
                        "kernels");
}

bool wide_sum_blocks16_from_env(const Env& env) {
  return on_unless_zero(env, "TRAINER_BN_WIDE_SUMS",
                        "0 lays out the 16-bit channel sums of layers over 32 lanes (256 channels at eight a "
                        "thread) as an H200 ran them on 2026-11-27 (up to 256 lanes across a block); unset it for "
                        "blocks of 32 lanes by 8 rows");
}

bool batchnorm_folds_from_env(const Env& env) {
  return on_unless_zero(env, "TRAINER_BN_FOLD",
                        "0 runs the batch norm's per-channel steps (statistics from the moments, parameter "
                        "gradients from the sums, the 16-bit passes' coefficients) in their own kernels, as an H200 "
                        "ran them on 2026-11-27 and 28; unset it to fold them into the kernels beside them");
}

bool vit_autocast_from_env(const Env& env) {
  return on_unless_zero(env, "TRAINER_VIT_AUTOCAST",
                        "0 keeps the ViTs' matrix products in fp32 under bf16-mixed / 16-mixed (the path before "
                        "2026-11-26); unset it for 16-bit products with fp32 accumulation, as torch.autocast");
}

bool vit_fused_attention_from_env(const Env& env) {
  return on_unless_zero(env, "TRAINER_VIT_FUSED_ATTENTION",
                        "0 keeps the ViTs' attention as batched 16-bit products and a softmax kernel under "
                        "bf16-mixed / 16-mixed (the path before 2026-11-27); unset it for cuDNN's fused attention");
}

bool vit_bias_epilogue_from_env(const Env& env) {
  return on_unless_zero(env, "TRAINER_VIT_BIAS_EPILOGUE",
                        "0 adds the ViTs' Linear biases in a separate pass on GPUs (the path before 2026-11-28); "
                        "unset it for cuBLASLt's bias epilogue inside each product");
}

bool vit_activation_copies_from_env(const Env& env) {
  return on_unless_zero(env, "TRAINER_VIT_16BIT_COPIES",
                        "0 makes every 16-bit ViT product cast its operands under bf16-mixed / 16-mixed (the path "
                        "before 2026-11-27); unset it for the 16-bit activation copies that LayerNorm, GELU and the "
                        "fused attention write");
}

bool depthwise_chunks_from_env(const Env& env) {
  return on_unless_zero(env, "TRAINER_DEPTHWISE_CHUNKS",
                        "0 sums the EfficientNets' depthwise weight gradients with one block per channel and tap "
                        "(the layout before 2026-11-29); unset it for chunks of rows with every tap at once");
}

namespace {
// The environment's switches between measured and new paths (docs/GPU.md).
std::unique_ptr<compute::Backend> with_fusion(std::unique_ptr<compute::Backend> backend) {
  const Env env = capture_environment();
  backend->set_fuses_norm_activation(fused_norm_from_env(env));
  backend->set_caches_filters16(filter_cache_from_env(env));
  backend->set_tiled_batchnorm(tiled_batchnorm_from_env(env));
  backend->set_wide_sum_blocks16(wide_sum_blocks16_from_env(env));
  backend->set_folds_batchnorm_steps(batchnorm_folds_from_env(env));
  backend->transformer_ops().set_autocast(vit_autocast_from_env(env));
  backend->transformer_ops().set_fused_attention(vit_fused_attention_from_env(env));
  backend->transformer_ops().set_activation_copies(vit_activation_copies_from_env(env));
  backend->mbconv_ops().set_chunked_depthwise_weights(depthwise_chunks_from_env(env));
  return backend;
}
}  // namespace

std::unique_ptr<compute::Backend> make_backend(const BackendRequest& request, const Log& log) {
  const compute::Precision precision = compute::parse_precision(request.precision);
  [[maybe_unused]] const compute::ConvAlgorithms algorithms =  // validated on every build, used by the GPU path
      compute::parse_conv_algorithms(request.conv_algorithms);
  const Env env = capture_environment();
  const Nhwc16Choice nhwc16 = nhwc16_from_env(env);
  // Validated on every build; only GPUs have the epilogue.
  [[maybe_unused]] const bool bias_epilogue = vit_bias_epilogue_from_env(env);
#ifdef TRAINER_WITH_CUDA
  if (request.gpu) {
    compute::CudaBackendOptions options;
    options.precision = precision;
    options.allow_tf32 = request.float32_matmul == "high";
    options.conv_algorithms = algorithms;
    if ((algorithms == compute::ConvAlgorithms::graph || algorithms == compute::ConvAlgorithms::graph_autotune) &&
        !compute::cudnn_graph_api_built())
      throw UserError("model.conv_algorithms " + request.conv_algorithms +
                          " needs cuDNN's graph API, and this trainer was built without cudnn-frontend's headers",
                      "run scripts/fetch_cudnn_frontend.sh and rebuild, or use model.conv_algorithms heuristics");
    options.nhwc16_activations = nhwc16 != Nhwc16Choice::off;
    options.vit_bias_epilogue = bias_epilogue;
    return with_fusion(compute::make_cuda_backend(request.device, options));
  }
#endif
  if (request.gpu)
    throw UserError("a GPU was asked for, but this trainer was built without the GPU path",
                    "rebuild with -DTRAINER_CUDA=ON or use --accelerator cpu");
  if (precision != compute::Precision::fp32) log.warn(cpu_precision_warning(request.precision));
  auto backend = with_fusion(compute::make_cpu_backend(request.cpu_threads, precision));
  if (nhwc16 == Nhwc16Choice::on) backend->set_activation_storage(compute::storage_16bit_of(precision));
  return backend;
}

std::unique_ptr<compute::Backend> make_run_backend(const Config& config, const runtime::RunPlan& plan,
                                                   const Log& log) {
  BackendRequest request;
  request.gpu = plan.accelerator == "gpu";
  request.device = plan.rank.device;
  request.precision = config.model.precision;
  request.float32_matmul = config.model.float32_matmul_precision;
  request.conv_algorithms = config.model.conv_algorithms;
  request.cpu_threads = plan.rank.compute_threads;  // the plan's share of this node's CPUs
  return make_backend(request, log);
}

std::unique_ptr<compute::Backend> make_predict_backend(const Config& config, const Log& log,
                                                       const std::string& precision) {
  const std::string& accelerator = config.distributed.accelerator;
  BackendRequest request;
  request.gpu = accelerator == "gpu" || (accelerator == "auto" && runtime::visible_gpu_count() > 0);
  request.precision = precision;
  request.float32_matmul = config.model.float32_matmul_precision;
  request.conv_algorithms = config.model.conv_algorithms;
  auto backend = make_backend(request, log);
  if (request.gpu) log.info("predicting on GPU 0 (precision " + precision + ")");
  return backend;
}

std::string predict_precision(const std::string& name) {
  if (name == "fp32" || name == "32") return "32";
  if (name == "bf16" || name == "bf16-mixed") return "bf16-mixed";
  if (name == "fp16" || name == "16-mixed") return "16-mixed";
  throw UserError("predict: unknown --precision '" + name + "'",
                  "fp32 (the default), bf16 or fp16, as litpose predict; or Lightning's 32, bf16-mixed, 16-mixed");
}

}  // namespace trainer::app
