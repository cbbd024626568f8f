#pragma once
// The one place compute backends are made (train, predict, bench step).
#include <memory>  // std::unique_ptr
#include <string>  // std::string

#include "config/config.hpp"        // Config
#include "compute/backend.hpp"   // compute::Backend
#include "runtime/run_plan.hpp"  // runtime::RunPlan
#include "util/env.hpp"          // Env
#include "util/log.hpp"          // Log

namespace trainer::app {

// What a command asks of the compute backend.
struct BackendRequest {
  bool gpu = false;                         // CUDA on `device`, else the CPU
  int device = 0;
  std::string precision = "32";             // model.precision
  std::string float32_matmul = "highest";   // model.float32_matmul_precision (GPU only)
  std::string conv_algorithms = "auto";  // model.conv_algorithms (GPU only)
  int cpu_threads = 0;                      // 0: OMP_NUM_THREADS, else the CPUs this process may use
};

// A GPU asked of a CPU-only build is a user error; a mixed precision on the CPU is
// emulated (same numerics as the GPU, no speed-up) and rank 0 warns once.
std::unique_ptr<compute::Backend> make_backend(const BackendRequest& request, const Log& log);

// The run's backend: CUDA on the planned GPU, or the CPU, with the configured precision.
std::unique_ptr<compute::Backend> make_run_backend(const Config& config, const runtime::RunPlan& plan,
                                                   const Log& log);

// Prediction's backend, one process on one device: the first visible GPU when
// distributed.accelerator allows it (gpu, or auto with a GPU visible in a CUDA
// build), else the CPU, in `precision` (a model.precision name; predict --precision),
// whatever the training precision was.
std::unique_ptr<compute::Backend> make_predict_backend(const Config& config, const Log& log,
                                                       const std::string& precision = "32");

// `predict --precision`: lightning-pose's names (litpose predict --precision fp32 |
// fp16 | bf16, default fp32) and Lightning's (32, 16-mixed, bf16-mixed), as the
// model.precision name; UserError for anything else.
std::string predict_precision(const std::string& name);

// TRAINER_FUSED_NORM: 1 or unset (the default) lets layers use the fused batch-norm
// + residual + ReLU ops, 0 the separate ops of the path that ran on a GPU on
// 2026-11-22 (compute::Backend::fuses_norm_activation); UserError otherwise.
bool fused_norm_from_env(const Env& env);

// TRAINER_NHWC16 (16-bit NHWC activations in bf16-mixed / 16-mixed,
// compute::Backend::activation_storage): unset = on GPUs, off on CPUs; 1 = on
// (on CPUs the 16-bit storage is emulated, for tests); 0 = off (fp32 activations
// with a cast at every convolution: the path measured on 2026-11-26); UserError
// otherwise.
enum class Nhwc16Choice { device_default, on, off };
Nhwc16Choice nhwc16_from_env(const Env& env);

// TRAINER_FILTER_CACHE (bf16-mixed / 16-mixed on GPUs): 1 or unset = a ResNet's
// filters cast to 16 bits once per forward, in one launch, and read by its
// convolutions and their backward (compute::Backend::cache_filters16); 0 = each
// convolution casts its filter at every use (the path before 2026-11-27, which ran on
// GPUs). Anything else is a UserError.
bool filter_cache_from_env(const Env& env);
// TRAINER_BN_KERNELS (batch norm on GPUs, 16-bit NHWC and fp32 NCHW activations): 1 or
// unset = the tiled batch-norm kernels; 0 = those an H200 ran on 2026-11-27 and 28
// (docs/GPU.md). Throws UserError for any other value.
bool tiled_batchnorm_from_env(const Env& env);
// TRAINER_BN_WIDE_SUMS (the tiled 16-bit channel sums of layers over 32 lanes, 256
// channels at eight a thread): 1 or unset = blocks of 32 lanes by 8 rows; 0 = the
// layout an H200 ran on 2026-11-27 (docs/GPU.md). Throws UserError for any other value.
bool wide_sum_blocks16_from_env(const Env& env);
// TRAINER_BN_FOLD (batch norm on GPUs): 1 or unset = the per-channel steps between the
// passes over the activations folded into the kernels beside them
// (compute::Backend::folds_batchnorm_steps); 0 = in their own kernels, as an H200 ran
// them on 2026-11-27 and 28 (docs/GPU.md). Throws UserError for any other value.
bool batchnorm_folds_from_env(const Env& env);

// TRAINER_VIT_AUTOCAST (the ViTs' products in bf16-mixed / 16-mixed,
// compute::TransformerOps::set_autocast): 1 or unset = 16-bit operands with fp32
// accumulation, as torch.autocast; 0 = the fp32 ViT ops of before 2026-11-26
// (the 16-bit path has not run on a GPU yet). Anything else is a UserError.
bool vit_autocast_from_env(const Env& env);

// TRAINER_VIT_FUSED_ATTENTION (the ViTs' attention in bf16-mixed / 16-mixed on GPUs,
// compute::TransformerOps::set_fused_attention): 1 or unset = cuDNN's fused attention
// where cuDNN takes the shape (the [tokens, tokens] planes never written); 0 = batched
// 16-bit products and a softmax kernel (the path before 2026-11-27). Neither has run
// on a GPU yet. Anything else is a UserError.
bool vit_fused_attention_from_env(const Env& env);

// TRAINER_VIT_16BIT_COPIES (the ViTs in bf16-mixed / 16-mixed,
// compute::TransformerOps::set_activation_copies): 1 or unset = LayerNorm, GELU and the
// fused attention write 16-bit copies of their outputs beside the fp32 values, which
// the Linear layers read in both passes instead of casting the fp32 values again (the
// same bits); 0 = every product casts its operands (the path before 2026-11-27). Neither
// has run on a GPU yet. Anything else is a UserError.
bool vit_activation_copies_from_env(const Env& env);

// TRAINER_VIT_BIAS_EPILOGUE (the ViTs on GPUs, compute::CudaBackendOptions::
// vit_bias_epilogue): 1 or unset = each Linear adds its bias inside its product
// (cuBLASLt's bias epilogue; 10% faster in an H200's ViT-S bf16 step, 2026-11-28)
// instead of a separate pass over the output; 0 = the separate pass (the path before).
// Anything else is a UserError.
bool vit_bias_epilogue_from_env(const Env& env);

// TRAINER_DEPTHWISE_CHUNKS (the EfficientNets on GPUs, compute::MbConvOps::
// set_chunked_depthwise_weights): 1 or unset = each depthwise weight gradient in
// chunks of the batch's rows, every tap at once, the chunks added in order; 0 = one
// block per (channel, tap), the layout before 2026-11-29. Neither has run on a GPU
// yet. Anything else is a UserError.
bool depthwise_chunks_from_env(const Env& env);

// The warning for a mixed `precision` ("bf16-mixed", "16-mixed") on the CPU.
std::string cpu_precision_warning(const std::string& precision);

}  // namespace trainer::app
