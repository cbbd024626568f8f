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
#include <vector>  // std::vector

namespace trainer::compute {

enum class Precision {
  fp32,  // "32": fp32 everywhere (TF32 off on GPUs)
  bf16,  // "bf16-mixed": bfloat16 convolutions, no loss scaling
  fp16,  // "16-mixed": IEEE half convolutions, dynamic loss scaling (train::LossScaler)
};

// The names of model.precision, one per Precision: "32", "bf16-mixed", "16-mixed".
const std::vector<std::string>& precision_names();
// The config spelling of `p`, one of precision_names().
const char* precision_name(Precision p);
// The inverse of precision_name; throws UserError listing precision_names() for anything else.
Precision parse_precision(const std::string& name);

// How fp32 convolutions run on GPUs (model.float32_matmul_precision); CPUs ignore it.
enum class Float32MatmulPrecision {
  highest,  // "highest": true fp32, TF32 off (matches the CPU path)
  high,     // "high": TF32 tensor cores allowed, as PyTorch does for cuDNN convolutions
};
// The names of model.float32_matmul_precision: "highest", "high".
const std::vector<std::string>& float32_matmul_precision_names();
// One of float32_matmul_precision_names(); throws UserError listing them for anything else.
Float32MatmulPrecision parse_float32_matmul_precision(const std::string& name);
// How the GPU backend picks each convolution's cuDNN algorithm (model.conv_algorithms);
// CPUs ignore it.
enum class ConvAlgorithms {
  automatic,   // "auto" (the default): graph where this build has cuDNN's graph API, with
               // heuristics for any shape the graph API has no engine for; else heuristics
  heuristics,  // "heuristics": cuDNN's ranked heuristics through the legacy calls, no device sync
  benchmark,   // "benchmark": run every algorithm once per shape (cudnnFind*), as on 2026-11-22
  graph,       // "graph": cuDNN's graph API (cudnn-frontend), heuristics mode A then the fallback list
  graph_autotune,  // "graph-autotune": the graph API, timing its top candidates once per shape
  autotune,    // "autotune": per shape and pass, graph-autotune's pick or cudnnFind's, whichever
               // runs faster on the step's own buffers (the legacy calls' alone without the graph API)
};
// The names of model.conv_algorithms, indexed by ConvAlgorithms: "auto", "heuristics",
// "benchmark", "graph", "graph-autotune", "autotune".
const std::vector<std::string>& conv_algorithms_names();
// One of conv_algorithms_names(); throws UserError listing them for anything else.
ConvAlgorithms parse_conv_algorithms(const std::string& name);
// The value x has after a round trip through the precision's 16-bit type (x itself for fp32).
float round_to_precision(Precision p, float x);

}  // namespace trainer::compute
