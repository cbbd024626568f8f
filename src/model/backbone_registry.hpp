#pragma once
// Every backbone the trainer can build, by name (the value of model.backbone).
// This is the one place that lists them: config_keys (and through it --help,
// `plan` and docs/CONFIG.md's checks), bench step and both heatmap models take
// the names and the factories from here.
#include <memory>  // std::unique_ptr
#include <string>  // std::string
#include <vector>  // std::vector

#include "model/backbone.hpp"         // Backbone
#include "model/parameter_store.hpp"  // ParameterStore
#include "util/stored_tensor.hpp"     // StoredTensor

namespace trainer::model {

// In the order --help lists them.
const std::vector<std::string>& backbone_names();

// Where lightning-pose downloads the pretrained weights of backbone `name`
// (docs/MODEL.md lists them); the trainer reads such files from model.backbone_weights.
std::string backbone_weights_url(const std::string& name);

// The Hugging Face model a backbone's weights come from ("facebook/dino-vits16"),
// read off its weights URL; empty for the others (torchvision, mmpose).
std::string backbone_hugging_face_id(const std::string& name);

// Our name for a tensor of a pretrained backbone file: torchvision's ResNet names
// (conv1.weight, layer1.0.bn1.running_mean, ...) gain "backbone."; mmpose's
// (backbone.conv1.weight, ...) stay; lightning-pose's checkpoints (backbone.0.weight,
// backbone.4.0.conv1.weight: the ResNet's children by index) are renamed; a
// "module." prefix (DDP) goes; Hugging Face's ViTModel names (embeddings.*,
// encoder.layer.*, layernorm.*; "vit." before them goes) gain
// "backbone.vision_encoder.", as lightning-pose's checkpoints hold them. Empty for
// the tensors of a classifier, a pooler or a head, which are not the backbone's.
std::string backbone_tensor_name(std::string name);

// Brings a pretrained file's tensors to the shapes the store wants where lightning-pose
// transforms them at load: DINOv2's 14x14 patch-embedding kernels become 16x16
// (model/vit.hpp, resize_patch_embedding); SAM's 64x64 position table becomes the
// run's grid (resize_position_table). Others are left as they are.
void adapt_backbone_tensors(std::vector<StoredTensor>& tensors, const ParameterStore& store);

// Builds backbone `name`, registering its tensors in `store` under `prefix`
// (see backbone.hpp), for input images of size `image` (which only vitb_sam's
// tensors depend on). Throws UserError for an unknown name.
std::unique_ptr<Backbone> make_backbone(const std::string& name, ParameterStore& store, const std::string& prefix,
                                        ImageSize image = {});

}  // namespace trainer::model
