#include "compute/precision.hpp"

#include "compute/float16.hpp"  // f16::round_bf16, round_half
#include "util/error.hpp"       // UserError

namespace trainer::compute {

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
  throw UserError("unknown precision '" + name + "'", "use one of 32, bf16-mixed, 16-mixed");
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
