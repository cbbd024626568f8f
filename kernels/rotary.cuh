#pragma once
// The rotary position embedding kernels (TransformerOps::rotary_forward/backward and
// rotary_tables, DINOv3's RoPE). CPU twin: src/compute/cpu/cpu_transformer_rotary.cpp;
// both turn each pair, and make each table entry, with compute/rotary_rule.hpp. The
// launchers only enqueue on `stream`.
#include <cuda_runtime_api.h>  // cudaStream_t

namespace trainer::kernels {

// In place on x [batch, tokens, heads * head_dim]: for patch token p (token prefix + p),
// every head and i < head_dim / 2, the pair (x[i], x[i + head_dim / 2]) turns by the
// angle of cos/sin[p * head_dim / 2 + i]; by its inverse when `inverse` (the backward).
void rotary(float* x, const float* cos, const float* sin, int batch, int tokens, int prefix, int heads, int head_dim,
            bool inverse, cudaStream_t stream);

// cos / sin [grid_h * grid_w, head_dim / 2] of rotary_angle with the coordinates times
// *scale (read on the device) and inv_freq [head_dim / 4].
void rotary_tables(const float* scale, const float* inv_freq, float* cos, float* sin, int grid_h, int grid_w,
                   int head_dim, cudaStream_t stream);

}  // namespace trainer::kernels
