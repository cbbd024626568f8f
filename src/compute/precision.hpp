#pragma once
// The arithmetic precision of a backend's convolutions (config model.precision).
//
// Mixed precision here is "autocast at the convolution boundary", as torch.autocast
// does for convolutions: activations, gradients, batch norm, pooling, the heatmap
// loss, master weights and Adam state stay fp32 in memory; every convolution and
// transposed convolution (forward, backward-data, backward-weights) rounds its two
// operands to the 16-bit type, accumulates in fp32, and rounds its result to the
// 16-bit type once before it is widened back to fp32. docs/GPU.md, "Mixed precision".
#include <string>  // std::string

namespace trainer::compute {

enum class Precision {
  fp32,  // "32": fp32 everywhere (TF32 off on GPUs)
  bf16,  // "bf16-mixed": bfloat16 convolutions, no loss scaling
  fp16,  // "16-mixed": IEEE half convolutions, dynamic loss scaling (train::LossScaler)
};

// The config spelling: "32", "bf16-mixed", "16-mixed".
const char* precision_name(Precision p);
// The inverse of precision_name; throws UserError for anything else.
Precision parse_precision(const std::string& name);
// The value x has after a round trip through the precision's 16-bit type (x itself for fp32).
float round_to_precision(Precision p, float x);

}  // namespace trainer::compute
