#pragma once
// Pretrained backbone weights from the files users already have (model.backbone_weights,
// or --init-weights): torchvision's ImageNet .pth files, mmpose's pose checkpoints
// (lightning-pose's resnet50_animal_ap10k and friends), .safetensors, and trainer
// checkpoints (.h5). The format is recognised from the file's first bytes.
#include <functional>  // std::function
#include <string>      // std::string
#include <vector>      // std::vector

#include "compute/stream.hpp"         // compute::Stream
#include "model/parameter_store.hpp"  // model::ParameterStore
#include "util/stored_tensor.hpp"     // StoredTensor

namespace trainer::train {

struct PretrainedLoad {
  std::string format;  // "PyTorch (torch.save)", "safetensors", "trainer checkpoint"
  int tensors = 0;     // backbone tensors loaded (parameters, BN statistics, counters)
  int ignored = 0;     // tensors of the file that are not the backbone's (fc.*, heads)
};

// Loads every backbone tensor (backbone.* in the store) from `path`. A UserError names
// the file and the tensor for: an unknown or corrupt format, a shape that does not
// match (a ResNet-18 file for a ResNet-50 backbone), or a backbone tensor the file lacks.
PretrainedLoad load_pretrained_backbone(const std::string& path, model::ParameterStore& store,
                                        compute::Stream& stream);

// lightning-pose's model.backbone_checkpoint (vitb_imagenet only): a ViT-MAE checkpoint
// (.safetensors or torch.save, a Lightning `state_dict` unwrapped) laid over the
// encoder after its pretrained weights, as vit.py's load_vit_backbone_checkpoint
// does: each vit_mae.vit.<name> tensor whose name and shape match the encoder's
// <name> is loaded, every other tensor skipped (counted in `ignored`). A file with
// none that fits is a UserError, where lightning-pose would load nothing silently.
PretrainedLoad load_vit_mae_checkpoint(const std::string& path, model::ParameterStore& store,
                                       compute::Stream& stream);

// How load_stored_tensors maps and selects a weight file's tensors.
struct StoredTensorLoad {
  std::string path;            // the file, for messages
  std::string what = "model";  // "backbone" or "model", for messages
  bool backbone_only = false;  // load the backbone's tensors only (else every tensor of the store)
  // Our name for a tensor of the file; empty when it is not one of this model's.
  std::function<std::string(const std::string&)> our_name;
  std::string hint;                        // what the shape / missing-tensor errors suggest
  std::string none_message, none_hint;     // when no tensor of the file is this model's
  // PyTorch's load_state_dict(strict=False), as lightning-pose loads model.checkpoint:
  // a file tensor that maps to none of the selection or differs in shape is skipped
  // (counted in `ignored`), and a selected tensor the file lacks keeps its value.
  bool lenient = false;
};

// Loads the selected tensors of `store` from `tensors` (float32/64, float16, bfloat16;
// num_batches_tracked counters optional), after checking each: a file tensor that
// maps to no tensor of the selection, a shape that differs, or a selected tensor the
// file lacks is a UserError naming the file and the tensor. Returns the tensors loaded;
// `ignored` (if given) counts the file's tensors that are not this model's.
int load_stored_tensors(const std::vector<StoredTensor>& tensors, const StoredTensorLoad& how,
                        model::ParameterStore& store, compute::Stream& stream, int* ignored = nullptr);

}  // namespace trainer::train
