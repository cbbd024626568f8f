// CudaTransformerOps' attention as cuDNN's fused attention (attention_graphs.hpp), in
// a 16-bit autocast precision where cuDNN takes the shape: q, k, v cast to 16-bit
// copies, one cuDNN call, and the 16-bit result widened to fp32. The [tokens, tokens]
// planes are never written: the state (`probs`) holds the forward's softmax statistics
// (batch * heads * tokens floats) for the backward, which recomputes the
// probabilities from them. With activation copies (TransformerOps::activation_copies)
// the state also keeps the forward's 16-bit q, k, v and output, so the backward casts
// only dout, and the output projection reads the 16-bit output
// (attention_output16); without, they live in the stream's scratch and the backward
// casts q, k, v and the output again.
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

CudaTransformerOps::StatePath CudaTransformerOps::state_path(const float* state, const AttentionShape& a) {
  if (const auto it = fused_state_.find(state); it != fused_state_.end()) return it->second;
  StatePath unknown;  // no forward wrote it here: what a forward would take now, without copies
  unknown.fused = fused_attention_ready(a);
  return unknown;
}

namespace {

// The fused state's layout: the softmax statistics (one float per query row), padded
// to 256 bytes, then (with activation copies) the forward's 16-bit q, k, v and output.
std::size_t stats_floats(const AttentionShape& a) {
  const std::size_t stats = std::size_t(a.batch) * a.heads * a.tokens;
  return (stats + 63) / 64 * 64;
}
std::uint16_t* kept_copy(float* state, const AttentionShape& a, int which) {  // 0 q, 1 k, 2 v, 3 out
  const std::size_t n = std::size_t(a.batch) * a.tokens * a.width();
  return reinterpret_cast<std::uint16_t*>(state + stats_floats(a)) + std::size_t(which) * n;
}

}  // namespace

std::size_t CudaTransformerOps::attention_state_count(const AttentionShape& a) {
  if (autocast_precision() == Precision::fp32 || !fused_attention_ready(a)) return a.probs_count();
  if (!activation_copies()) return std::size_t(a.batch) * a.heads * a.tokens;  // one statistic per query row
  const std::size_t n = std::size_t(a.batch) * a.tokens * a.width();
  return stats_floats(a) + 2 * n;  // and four 16-bit copies of n values
}

const std::uint16_t* CudaTransformerOps::attention_output16(const float* state, const AttentionShape& a) {
  if (a.queries() != a.tokens) return nullptr;  // never fused (fused_attention_takes)
  const auto it = fused_state_.find(state);
  return it != fused_state_.end() && it->second.copies ? kept_copy(const_cast<float*>(state), a, 3) : nullptr;
}

void CudaTransformerOps::attention_forward_fused(const float* q, const float* k, const float* v, float* state,
                                                 float* out, const AttentionShape& a, bool keep_copies, Stream& s) {
  const Precision p = autocast_precision();
  const std::size_t n = std::size_t(a.batch) * a.tokens * a.width();
  constexpr std::size_t h = sizeof(std::uint16_t);
  cudnnHandle_t handle = cudnn_on(s);
  const std::size_t workspace = attention_graphs_->prepare(handle, a, p, AttentionPass::forward);
  // The copies live in the state when kept for the backward (and the output projection),
  // else in the stream's scratch.
  const std::size_t scratch_copies = keep_copies ? 0 : n * h;
  ScratchCarve carve(as_cuda(s), {scratch_copies, scratch_copies, scratch_copies, scratch_copies, workspace});
  std::uint16_t* copy[4];
  for (int i = 0; i < 4; ++i) copy[i] = keep_copies ? kept_copy(state, a, i) : carve.as<std::uint16_t>(i);
  cast16(q, copy[0], n, s);
  cast16(k, copy[1], n, s);
  cast16(v, copy[2], n, s);
  AttentionOperands x;
  x.q = copy[0], x.k = copy[1], x.v = copy[2], x.o = copy[3], x.stats = state;
  attention_graphs_->run(handle, a, p, AttentionPass::forward, x, carve.as<void>(4));
  widen16(copy[3], out, n, s);
}

void CudaTransformerOps::attention_backward_fused(const float* q, const float* k, const float* v, const float* state,
                                                  const float* out, const float* dout, float* dq, float* dk, float* dv,
                                                  const AttentionShape& a, bool copies_kept, Stream& s) {
  const Precision p = autocast_precision();
  const std::size_t n = std::size_t(a.batch) * a.tokens * a.width();
  constexpr std::size_t h = sizeof(std::uint16_t);
  cudnnHandle_t handle = cudnn_on(s);
  const std::size_t workspace = attention_graphs_->prepare(handle, a, p, AttentionPass::backward);
  // q, k, v and the output: the forward's copies, or cast again (then the cast of the
  // widened output gives the forward's 16-bit output exactly).
  const std::size_t recast = copies_kept ? 0 : n * h;
  ScratchCarve carve(as_cuda(s), {recast, recast, recast, recast, n * h, n * h, n * h, n * h, workspace});
  const std::uint16_t* forward16[4];
  const float* forward32[4] = {q, k, v, out};
  for (int i = 0; i < 4; ++i)
    forward16[i] = copy_or_cast(forward32[i], copies_kept ? kept_copy(const_cast<float*>(state), a, i) : nullptr,
                                carve.as<std::uint16_t>(i), n, s);
  std::uint16_t* part[4];  // dout, dq, dk, dv
  for (int i = 0; i < 4; ++i) part[i] = carve.as<std::uint16_t>(4 + i);
  cast16(dout, part[0], n, s);
  AttentionOperands x;
  x.q = forward16[0], x.k = forward16[1], x.v = forward16[2];
  x.o = const_cast<std::uint16_t*>(forward16[3]);  // read only: the graph's pack takes void*
  x.dout = part[0];
  x.stats = const_cast<float*>(state);  // read only, as o
  x.dq = part[1], x.dk = part[2], x.dv = part[3];
  attention_graphs_->run(handle, a, p, AttentionPass::backward, x, carve.as<void>(8));
  widen16(part[1], dq, n, s);
  widen16(part[2], dk, n, s);
  widen16(part[3], dv, n, s);
}

}  // namespace trainer::compute::cuda
