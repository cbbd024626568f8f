#pragma once
// How Hugging Face's vision transformers initialise what pretrained weights do not
// replace (_init_weights of ViT, SAM and SAM2): weights N(0, 0.02) (ViT truncates at
// +-2 sigma; this does not), biases 0, LayerNorm gains 1.
#include "model/parameter_store.hpp"  // InitRule

namespace trainer::model {

inline InitRule hugging_face_normal() {
  InitRule r;
  r.kind = InitRule::kaiming_normal_fan_out;  // std = gain / sqrt(fan_out)
  r.gain = 0.02;
  r.fan_out = 1;
  return r;
}

inline InitRule ones_init() {
  InitRule r;
  r.kind = InitRule::ones;
  return r;
}

}  // namespace trainer::model
