#pragma once
// Options of the CUDA backend beyond compute::make_cuda_backend(ordinal, precision),
// which uses the defaults below (TF32 off, benchmarked cuDNN algorithms).
#include <cstddef>  // std::size_t
#include <memory>   // std::unique_ptr

#include "compute/backend.hpp"  // compute::Backend

namespace trainer::compute {

struct CudaBackendOptions {
  // Convolution precision: fp32, or bf16 / fp16 operands (cast into NHWC copies)
  // with fp32 accumulation on tensor cores; see compute/precision.hpp.
  Precision precision = Precision::fp32;
  // TF32 tensor cores for fp32 convolutions and GEMMs: faster on Ampere/Hopper,
  // but results differ from the CPU backend by ~1e-3 relative. Off for parity
  // (and irrelevant to the 16-bit convolutions of bf16 / fp16).
  bool allow_tf32 = false;
  // How each convolution's cuDNN algorithm is chosen (model.conv_algorithms):
  // automatic (the default): the graph API where built, falling back to heuristics
  // per shape. An H200 measured the graph API 1.57x the legacy calls at bf16 batch 64
  // op by op on 2026-11-27 (ResNet-50 256x256: 3,755 against 2,387 images/s; the
  // legacy calls' host work per call bounded the step). heuristics (cudnnGet*_v7, the
  // first ranked algorithm that fits; the default from 2026-11-22, when an H100
  // measured it faster than cudnnFind), benchmark (cudnnFind*, once per shape, which
  // synchronizes the device during the first step), graph, graph-autotune
  // (cuda/conv_graphs.hpp), autotune (the faster of graph-autotune's and cudnnFind's
  // picks per shape, cuda/conv_runner.hpp).
  ConvAlgorithms conv_algorithms = ConvAlgorithms::automatic;
  // In bf16 / fp16: keep the backbone's activations and gradients in the
  // precision's 16-bit NHWC storage (Backend::activation_storage), so no convolution
  // casts them. false: fp32 NCHW activations, each convolution casting its operands
  // (the path measured on an H200 on 2026-11-26; TRAINER_NHWC16=0).
  bool nhwc16_activations = true;
  // The ViTs' Linear layers add their bias inside the product (cuBLASLt's bias
  // epilogue, cuda/lt_bias_gemm.hpp) instead of a separate pass over the output; the
  // same fp32 sum. On since an H200 measured it 10% faster in a ViT-S bf16 step on
  // 2026-11-28; false is the separate pass (TRAINER_VIT_BIAS_EPILOGUE=0).
  bool vit_bias_epilogue = true;
  // Largest cuDNN workspace one convolution may use.
  std::size_t conv_workspace_limit = std::size_t(1) << 30;
};

std::unique_ptr<Backend> make_cuda_backend(int device_ordinal, const CudaBackendOptions& options);

// Whether this build has cuDNN's graph API (cudnn-frontend's headers were found at
// build time): model.conv_algorithms graph | graph-autotune need it, and auto and
// autotune use it when it is there.
bool cudnn_graph_api_built();

}  // namespace trainer::compute
