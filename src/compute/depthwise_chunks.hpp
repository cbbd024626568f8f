#pragma once
// How the GPU splits a depthwise convolution's weight gradient (kernels/mbconv.cu,
// depthwise_backward_weights_chunked): one block per (channel, chunk of the batch's
// n * oh output rows), each summing every tap of its rows, then the chunks' sums
// added in chunk order. The rule is here, without CUDA, so that a CPU test can check
// that the chunks cover every row once (tests/unit/compute/test_depthwise_chunks.cpp).
#include <cstddef>  // std::size_t

namespace trainer::compute {

// Blocks per layer the chunks aim at: a few per SM of an H100 / H200 (132 SMs), so a
// layer of 32 channels still fills the GPU. chunks * c stays under twice this.
constexpr int kDepthwiseChunkBlocks = 512;

struct DepthwiseWeightChunks {
  int chunks = 0;            // 0: not for this kernel size (the per-tap kernel runs)
  int rows_per_chunk = 0;    // the last chunk may hold fewer
  std::size_t partials = 0;  // doubles of scratch: chunks * c * k * k
};

// The split for x [n, c, ., .] and dy [n, c, oh, .] with a k x k filter. The chunked
// kernel is built for k = 3 and 5, the EfficientNets' sizes.
inline DepthwiseWeightChunks depthwise_weight_chunks(int n, int c, int oh, int k) {
  DepthwiseWeightChunks plan;
  if ((k != 3 && k != 5) || c < 1) return plan;
  const int rows = n * oh;
  if (rows < 1) {
    plan.chunks = plan.rows_per_chunk = 1;  // one empty chunk: dw = 0
  } else {
    const int wanted = c >= kDepthwiseChunkBlocks ? 1 : (kDepthwiseChunkBlocks + c - 1) / c;
    const int chunks = wanted < rows ? wanted : rows;
    plan.rows_per_chunk = (rows + chunks - 1) / chunks;
    plan.chunks = (rows + plan.rows_per_chunk - 1) / plan.rows_per_chunk;  // none empty
  }
  plan.partials = std::size_t(plan.chunks) * std::size_t(c) * std::size_t(k) * std::size_t(k);
  return plan;
}

}  // namespace trainer::compute
