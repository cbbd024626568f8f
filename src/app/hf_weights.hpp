#pragma once
// Pretrained weights of the Hugging Face backbones (the ViTs) from the files users
// already have: lightning-pose gets them through transformers, which keeps them in
// the Hugging Face cache (<cache>/models--facebook--dino-vits16/snapshots/<revision>/
// model.safetensors). Nothing is downloaded.
#include <string>  // std::string

#include "util/env.hpp"  // Env

namespace trainer::app {

// The weights file for backbone `backbone` given model.backbone_weights = `given`:
// - for a backbone whose weights do not come from Hugging Face, or a given file: `given`;
// - a given folder: its model.safetensors (or pytorch_model.bin), a model folder's
//   snapshots/*/..., or a cache folder's models--<org>--<name>/snapshots/*/...;
//   UserError naming the model id and the file when it holds none;
// - nothing given: the file in the Hugging Face cache ($HF_HUB_CACHE, $HF_HOME/hub,
//   $XDG_CACHE_HOME/huggingface/hub, ~/.cache/huggingface/hub), else "" (random start).
std::string hugging_face_weights(const std::string& given, const std::string& backbone, const Env& env);

}  // namespace trainer::app
