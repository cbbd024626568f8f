// CudaTransformerOps' attention as cuDNN's fused attention (attention_graphs.hpp), in
// a 16-bit autocast precision where cuDNN takes the shape: q, k, v (and, backward, the
// forward's output and dout) cast to 16-bit copies in the stream's scratch, one cuDNN
// call, and the 16-bit result widened to fp32. The [tokens, tokens] planes are never
// written: `probs` holds the forward's softmax statistics (batch * heads * tokens
// floats) for the backward, which recomputes the probabilities from them.
//
// Rounding, against the batched-matmul attention (cuda_transformer_attention16.cpp)
// and its CPU twin: the same 16-bit operands; the probabilities enter the second
// product as 16-bit values in both; the output and the gradients dq, dk, dv are
// rounded to 16 bits here (cuDNN writes them in the operands' type), as torch's
// scaled_dot_product_attention under autocast returns them. The output's rounding is
// the cast that the output projection's 16-bit product makes anyway; the gradients'
// reach the projections' bias gradients (fp32 sums) as 16-bit values.
//
// The backward takes the forward's output as fp32 (`out`, the widened 16-bit values):
// casting it back gives the forward's 16-bit output exactly.
#include <cstdint>  // std::uint16_t
#include <string>   // std::string

#include "cast.cuh"                          // kernels::cast_from_16
#include "compute/cuda/attention_graphs.hpp"  // AttentionGraphCache, fused_attention_takes
#include "compute/cuda/cuda_check.hpp"       // CUDNN_CHECK, CUDA_CHECK_LAUNCH
#include "compute/cuda/cuda_stream.hpp"      // as_cuda
#include "compute/cuda/cuda_transformer_ops.hpp"
#include "compute/cuda/scratch_carve.hpp"    // ScratchCarve

namespace trainer::compute::cuda {

cudnnHandle_t CudaTransformerOps::cudnn_handle() {
  if (!cudnn_) cudnn_ = std::make_unique<CudnnHandle>();
  return *cudnn_;
}

cudnnHandle_t CudaTransformerOps::cudnn_on(Stream& s) {
  CUDNN_CHECK(cudnnSetStream(cudnn_handle(), as_cuda(s).get()));
  return *cudnn_;
}

void CudaTransformerOps::widen16(const std::uint16_t* src, float* dst, std::size_t count, Stream& s) {
  const auto format = autocast_precision() == Precision::fp16 ? kernels::Format16::fp16 : kernels::Format16::bf16;
  constexpr std::size_t kChunk = std::size_t(1) << 30;  // Dims4's int extents, as cast16
  for (std::size_t done = 0; done < count; done += kChunk) {
    const std::size_t part = count - done < kChunk ? count - done : kChunk;
    kernels::cast_from_16(src + done, dst + done, {1, 1, 1, int(part)}, format, /*nhwc=*/false, as_cuda(s).get());
  }
  CUDA_CHECK_LAUNCH();
}

bool CudaTransformerOps::fused_attention_ready(const AttentionShape& a) {
  const Precision p = autocast_precision();
  if (!fused_attention() || !fused_attention_takes(a, p)) return false;
  const auto key = std::make_tuple(a.batch, a.tokens, a.heads, a.head_dim, p);
  if (auto it = fused_ready_.find(key); it != fused_ready_.end()) return it->second;
  bool ready = false;
  try {
    // Both passes now, so that a forward never keeps statistics its backward cannot use.
    if (!attention_graphs_) attention_graphs_ = std::make_unique<AttentionGraphCache>();
    attention_graphs_->prepare(cudnn_handle(), a, p, AttentionPass::forward);
    attention_graphs_->prepare(cudnn_handle(), a, p, AttentionPass::backward);
    ready = true;
  } catch (const AttentionUnsupported& e) {  // CUDA and memory errors go on up
    if (fused_note_.empty()) fused_note_ = std::string(e.what()) + "; the batched-matmul attention runs it instead";
  }
  fused_ready_.emplace(key, ready);
  return ready;
}

bool CudaTransformerOps::state_is_fused(const float* state, const AttentionShape& a) {
  const auto it = fused_state_.find(state);
  return it != fused_state_.end() ? it->second : fused_attention_ready(a);
}

std::size_t CudaTransformerOps::attention_state_count(const AttentionShape& a) {
  if (autocast_precision() == Precision::fp32 || !fused_attention_ready(a)) return a.probs_count();
  return std::size_t(a.batch) * a.heads * a.tokens;  // one softmax statistic per query row
}

void CudaTransformerOps::attention_forward_fused(const float* q, const float* k, const float* v, float* stats,
                                                 float* out, const AttentionShape& a, Stream& s) {
  const Precision p = autocast_precision();
  const std::size_t n = std::size_t(a.batch) * a.tokens * a.width();
  constexpr std::size_t h = sizeof(std::uint16_t);
  cudnnHandle_t handle = cudnn_on(s);
  const std::size_t workspace = attention_graphs_->prepare(handle, a, p, AttentionPass::forward);
  ScratchCarve carve(as_cuda(s), {n * h, n * h, n * h, n * h, workspace});
  AttentionOperands x;
  auto* q16 = carve.as<std::uint16_t>(0);
  auto* k16 = carve.as<std::uint16_t>(1);
  auto* v16 = carve.as<std::uint16_t>(2);
  auto* o16 = carve.as<std::uint16_t>(3);
  cast16(q, q16, n, s);
  cast16(k, k16, n, s);
  cast16(v, v16, n, s);
  x.q = q16, x.k = k16, x.v = v16, x.o = o16, x.stats = stats;
  attention_graphs_->run(handle, a, p, AttentionPass::forward, x, carve.as<void>(4));
  widen16(o16, out, n, s);
}

void CudaTransformerOps::attention_backward_fused(const float* q, const float* k, const float* v, const float* stats,
                                                  const float* out, const float* dout, float* dq, float* dk, float* dv,
                                                  const AttentionShape& a, Stream& s) {
  const Precision p = autocast_precision();
  const std::size_t n = std::size_t(a.batch) * a.tokens * a.width();
  constexpr std::size_t h = sizeof(std::uint16_t);
  cudnnHandle_t handle = cudnn_on(s);
  const std::size_t workspace = attention_graphs_->prepare(handle, a, p, AttentionPass::backward);
  ScratchCarve carve(as_cuda(s), {n * h, n * h, n * h, n * h, n * h, n * h, n * h, n * h, workspace});
  std::uint16_t* part[8];
  for (int i = 0; i < 8; ++i) part[i] = carve.as<std::uint16_t>(i);
  const float* inputs[5] = {q, k, v, out, dout};
  for (int i = 0; i < 5; ++i) cast16(inputs[i], part[i], n, s);
  AttentionOperands x;
  x.q = part[0], x.k = part[1], x.v = part[2], x.o = part[3], x.dout = part[4];
  x.stats = const_cast<float*>(stats);  // read only: the graph's pack takes void*
  x.dq = part[5], x.dk = part[6], x.dv = part[7];
  attention_graphs_->run(handle, a, p, AttentionPass::backward, x, carve.as<void>(8));
  widen16(part[5], dq, n, s);
  widen16(part[6], dk, n, s);
  widen16(part[7], dv, n, s);
}

}  // namespace trainer::compute::cuda
