#include "compute/precision.hpp"

#include "compute/float16.hpp"  // f16::round_bf16, round_half
#include "util/error.hpp"       // UserError
#include "util/name_list.hpp"   // join_names

namespace trainer::compute {

const std::vector<std::string>& precision_names() {
  static const std::vector<std::string> names = {precision_name(Precision::fp32), precision_name(Precision::bf16),
                                                 precision_name(Precision::fp16)};
  return names;
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::fp32: return "32";
    case Precision::bf16: return "bf16-mixed";
    case Precision::fp16: return "16-mixed";
  }
  return "?";
}

Precision parse_precision(const std::string& name) {
  if (name == "32") return Precision::fp32;
  if (name == "bf16-mixed") return Precision::bf16;
  if (name == "16-mixed") return Precision::fp16;
  throw UserError("unknown precision '" + name + "'", "use one of " + join_names(precision_names()));
}

const std::vector<std::string>& float32_matmul_precision_names() {
  static const std::vector<std::string> names = {"highest", "high"};
  return names;
}

Float32MatmulPrecision parse_float32_matmul_precision(const std::string& name) {
  if (name == "highest") return Float32MatmulPrecision::highest;
  if (name == "high") return Float32MatmulPrecision::high;
  throw UserError("unknown float32_matmul_precision '" + name + "'",
                  "use one of " + join_names(float32_matmul_precision_names()));
}

const std::vector<std::string>& conv_algorithms_names() {
  static const std::vector<std::string> names = {"auto", "heuristics", "benchmark", "graph",
                                                 "graph-autotune", "autotune"};
  return names;
}

ConvAlgorithms parse_conv_algorithms(const std::string& name) {
  if (name == "auto") return ConvAlgorithms::automatic;
  if (name == "heuristics") return ConvAlgorithms::heuristics;
  if (name == "benchmark") return ConvAlgorithms::benchmark;
  if (name == "graph") return ConvAlgorithms::graph;
  if (name == "graph-autotune") return ConvAlgorithms::graph_autotune;
  if (name == "autotune") return ConvAlgorithms::autotune;
  throw UserError("unknown conv_algorithms '" + name + "'", "use one of " + join_names(conv_algorithms_names()));
}

float round_to_precision(Precision p, float x) {
  switch (p) {
    case Precision::bf16: return f16::round_bf16(x);
    case Precision::fp16: return f16::round_half(x);
    case Precision::fp32: break;
  }
  return x;
}

}  // namespace trainer::compute
