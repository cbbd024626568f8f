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
  // heuristics (cudnnGet*_v7, the first ranked algorithm that fits; the default since
  // an H100 measured it faster than cudnnFind on 2026-11-22, ResNet-50 256x256: bf16
  // batch 16 465 -> 656 images/s, TF32 batch 16 674 -> 695, bf16 batch 64 787 -> 796,
  // fp32 batch 16 477 -> 469), benchmark (cudnnFind*, once per shape, which
  // synchronizes the device during the first step), or cuDNN's graph API (graph,
  // graph-autotune; cuda/conv_graphs.hpp; not yet measured on a GPU).
  ConvAlgorithms conv_algorithms = ConvAlgorithms::heuristics;
  // In bf16 / fp16: keep the backbone's activations and gradients in the
  // precision's 16-bit NHWC storage (Backend::activation_storage), so no convolution
  // casts them. false: fp32 NCHW activations, each convolution casting its operands
  // (the path measured on an H200 on 2026-11-26; TRAINER_NHWC16=0).
  bool nhwc16_activations = true;
  // Largest cuDNN workspace one convolution may use.
  std::size_t conv_workspace_limit = std::size_t(1) << 30;
};

std::unique_ptr<Backend> make_cuda_backend(int device_ordinal, const CudaBackendOptions& options);

// Whether this build has cuDNN's graph API (cudnn-frontend's headers were found at
// build time): model.conv_algorithms graph | graph-autotune need it.
bool cudnn_graph_api_built();

}  // namespace trainer::compute
