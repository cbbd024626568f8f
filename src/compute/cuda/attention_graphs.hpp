#pragma once
// Multi-head attention as one cuDNN operation (scaled dot-product attention through
// cudnn-frontend's sdpa / sdpa_backward: flash-attention engines on sm_80+), the fused
// alternative to the batched-matmul attention (cuda_transformer_attention16.cpp). It
// never writes the [tokens, tokens] probability planes: the forward keeps one fp32
// statistic per query row (the softmax's log-sum-exp), the backward recomputes the
// probabilities from it. 16-bit (bf16 / fp16) operands only, fp32 softmax and
// accumulation, as torch's scaled_dot_product_attention under autocast.
//
// Layout: q, k, v, o and their gradients are [batch, tokens, heads * head_dim] in
// the precision's 16-bit type (head h is columns h*head_dim .. (h+1)*head_dim - 1, as
// TransformerOps' attention), described to cuDNN as [batch, heads, tokens, head_dim]
// with strides, so no transpose is made; stats are [batch, heads, tokens] fp32.
//
// Plans are built per shape, precision and pass at first use and kept for the
// backend's life. Deviceless building (build_attention_graph_deviceless): cuDNN's
// attention engines on Hopper are runtime-compiled, and finalizing their plans loads
// the kernel through the CUDA driver, so without a GPU the check goes as far as cuDNN
// accepting the graph and choosing an engine (DevicelessBuild::needs_driver); even
// that needs a libcuda to be loadable (the toolkit's stub serves: tests/integration/
// cudnn_deviceless_plans.sh).
#include <cudnn.h>  // cudnnHandle_t

#include <cstddef>  // std::size_t
#include <memory>   // std::unique_ptr
#include <string>   // std::string

#include "compute/cuda/conv_graphs.hpp"  // DevicelessBuild, cudnn_graph_api_built
#include "compute/precision.hpp"         // Precision
#include "compute/transformer_ops.hpp"   // AttentionShape
#include "util/error.hpp"                // SystemError

namespace trainer::compute::cuda {

enum class AttentionPass { forward, backward };
const char* attention_pass_name(AttentionPass pass);

// Whether the fused attention takes this shape and precision: 16-bit, head_dim a
// multiple of 8 (16-byte rows for the engines' loads) and at most 128 (every
// lightning-pose ViT has 64; cuDNN's Hopper engines go to 256, Ampere's backward to
// 128).
bool fused_attention_takes(const AttentionShape& a, Precision p);

// cuDNN does not run this attention here: no graph API in this build, a graph the
// frontend refuses, or no engine that builds. A caller may fall back to the batched
// products on this (and only this: CUDA and memory errors are SystemErrors as usual).
class AttentionUnsupported : public SystemError {
 public:
  using SystemError::SystemError;
};

// One call's device buffers (raw 16-bit values in the precision's type, except stats).
// forward: reads q, k, v; writes o and stats. backward: reads q, k, v, o, dout and
// stats; writes dq, dk, dv.
struct AttentionOperands {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  float* stats = nullptr;
  const void* dout = nullptr;
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
};

class AttentionGraphCache {
 public:
  AttentionGraphCache();  // AttentionUnsupported without the graph API
  ~AttentionGraphCache();
  AttentionGraphCache(const AttentionGraphCache&) = delete;
  AttentionGraphCache& operator=(const AttentionGraphCache&) = delete;

  // The workspace bytes run() needs for (a, p, pass), building its plan on first use.
  // AttentionUnsupported when cuDNN refuses the graph or has no engine for it.
  std::size_t prepare(cudnnHandle_t handle, const AttentionShape& a, Precision p, AttentionPass pass);
  // Runs (a, p, pass) on the handle's stream; workspace holds prepare()'s bytes.
  void run(cudnnHandle_t handle, const AttentionShape& a, Precision p, AttentionPass pass,
           const AttentionOperands& operands, void* workspace);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Builds (a, p, pass) for the GPU that `device_properties_json` describes, without a
// device: the same graph and engine order as prepare(). UserError if cuDNN does not
// accept the properties.
DevicelessBuild build_attention_graph_deviceless(const std::string& device_properties_json, const AttentionShape& a,
                                                 Precision p, AttentionPass pass);

}  // namespace trainer::compute::cuda
