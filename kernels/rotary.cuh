#pragma once
// The rotary position embedding kernel (TransformerOps::rotary_forward/backward,
// DINOv3's RoPE). CPU twin: src/compute/cpu/cpu_transformer_rotary.cpp; both turn
// each pair with compute/rotary_rule.hpp. The launcher only enqueues on `stream`.
#include <cuda_runtime_api.h>  // cudaStream_t

namespace trainer::kernels {

// In place on x [batch, tokens, heads * head_dim]: for patch token p (token prefix + p),
// every head and i < head_dim / 2, the pair (x[i], x[i + head_dim / 2]) turns by the
// angle of cos/sin[p * head_dim / 2 + i]; by its inverse when `inverse` (the backward).
void rotary(float* x, const float* cos, const float* sin, int batch, int tokens, int prefix, int heads, int head_dim,
            bool inverse, cudaStream_t stream);

}  // namespace trainer::kernels
