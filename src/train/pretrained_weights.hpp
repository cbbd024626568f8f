#pragma once
// Pretrained backbone weights from the files users already have (model.backbone_weights,
// or --init-weights): torchvision's ImageNet .pth files, mmpose's pose checkpoints
// (lightning-pose's resnet50_animal_ap10k and friends), .safetensors, and trainer
// checkpoints (.h5). The format is recognised from the file's first bytes.
#include <string>  // std::string

#include "compute/stream.hpp"         // compute::Stream
#include "model/parameter_store.hpp"  // model::ParameterStore

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

}  // namespace trainer::train
