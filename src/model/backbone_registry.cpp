// The backbone table (see backbone_registry.hpp). Adding a backbone: its class in
// its own files, implementing Backbone, and one line in kBackbones below.
#include "model/backbone_registry.hpp"

#include <cctype>  // std::isdigit

#include "model/efficientnet.hpp"          // make_efficientnet
#include "model/hiera.hpp"                 // make_hiera
#include "model/lightning_pose_names.hpp"  // state_name_from_lightning_pose
#include "model/resnet.hpp"                // make_resnet
#include "model/vit.hpp"                   // make_vit
#include "util/error.hpp"                  // UserError

namespace trainer::model {
namespace {

using BackboneFactory = std::unique_ptr<Backbone> (*)(ParameterStore& store, const std::string& name,
                                                      const std::string& prefix, ImageSize image);

struct BackboneEntry {
  const char* name;
  BackboneFactory make;
  // Where lightning-pose gets its pretrained weights (torchvision's ImageNet files,
  // mmpose's pose checkpoints); the trainer loads them from model.backbone_weights.
  const char* weights_url;
};

// A constant table rather than self-registering globals: no static mutable state,
// and the list (and its order in --help) is in one visible place.
constexpr BackboneEntry kBackbones[] = {
    {"resnet18", make_resnet, "https://download.pytorch.org/models/resnet18-f37072fd.pth"},
    {"resnet34", make_resnet, "https://download.pytorch.org/models/resnet34-b627a593.pth"},
    {"resnet50", make_resnet, "https://download.pytorch.org/models/resnet50-11ad3fa6.pth"},
    // lightning-pose asks torchvision for IMAGENET1K_V2 for resnet50/101/152.
    {"resnet101", make_resnet, "https://download.pytorch.org/models/resnet101-cd907fc2.pth"},
    {"resnet152", make_resnet, "https://download.pytorch.org/models/resnet152-f82ba261.pth"},
    {"resnet50_animal_apose", make_resnet,
     "https://download.openmmlab.com/mmpose/animal/resnet/res50_animalpose_256x256-e1f30bff_20210426.pth"},
    {"resnet50_animal_ap10k", make_resnet,
     "https://download.openmmlab.com/mmpose/animal/resnet/res50_ap10k_256x256-35760eb8_20211029.pth"},
    {"resnet50_human_jhmdb", make_resnet,
     "https://download.openmmlab.com/mmpose/top_down/resnet/res50_jhmdb_sub3_256x256-c4ec1a0b_20201122.pth"},
    {"resnet50_human_res_rle", make_resnet,
     "https://download.openmmlab.com/mmpose/top_down/deeppose/deeppose_res50_mpii_256x256_rle-5f92a619_20220504.pth"},
    {"resnet50_human_top_res", make_resnet,
     "https://download.openmmlab.com/mmpose/top_down/resnet/res50_mpii_256x256-418ffc88_20200812.pth"},
    {"resnet50_human_hand", make_resnet,
     "https://download.openmmlab.com/mmpose/hand/resnet/res50_onehand10k_256x256-739c8639_20210330.pth"},
    // torchvision's EfficientNets (lightning-pose asks for IMAGENET1K_V1 for B0 and B2,
    // IMAGENET1K_V2 for B1).
    {"efficientnet_b0", make_efficientnet, "https://download.pytorch.org/models/efficientnet_b0_rwightman-3dd342df.pth"},
    {"efficientnet_b1", make_efficientnet, "https://download.pytorch.org/models/efficientnet_b1-c27df63c.pth"},
    {"efficientnet_b2", make_efficientnet, "https://download.pytorch.org/models/efficientnet_b2_rwightman-bcdf34b7.pth"},
    // Hugging Face's ViTModel checkpoints (lightning-pose loads them through transformers).
    {"vits_dino", make_vit, "https://huggingface.co/facebook/dino-vits16/resolve/main/model.safetensors"},
    {"vitb_dino", make_vit, "https://huggingface.co/facebook/dino-vitb16/resolve/main/model.safetensors"},
    {"vits_dinov2", make_vit, "https://huggingface.co/facebook/dinov2-small/resolve/main/model.safetensors"},
    {"vitb_dinov2", make_vit, "https://huggingface.co/facebook/dinov2-base/resolve/main/model.safetensors"},
    // DINOv3 (gated on Hugging Face: its files come after accepting Meta's licence there).
    {"vits_dinov3", make_vit,
     "https://huggingface.co/facebook/dinov3-vits16-pretrain-lvd1689m/resolve/main/model.safetensors"},
    {"vitb_dinov3", make_vit,
     "https://huggingface.co/facebook/dinov3-vitb16-pretrain-lvd1689m/resolve/main/model.safetensors"},
    // MAE's ViT-B, which lightning-pose reads into a plain ViTModel.
    {"vitb_imagenet", make_vit, "https://huggingface.co/facebook/vit-mae-base/resolve/main/model.safetensors"},
    // SAM's image encoder (the whole SamModel's file; its prompt encoder and mask
    // decoder are not the backbone's).
    {"vitb_sam", make_vit, "https://huggingface.co/facebook/sam-vit-base/resolve/main/model.safetensors"},
    // SAM 2.1's Hiera image encoders (the whole Sam2Model's file; its FPN neck, memory
    // and mask decoder are not the backbone's).
    {"vitt_sam2", make_hiera, "https://huggingface.co/facebook/sam2.1-hiera-tiny/resolve/main/model.safetensors"},
    {"vits_sam2", make_hiera, "https://huggingface.co/facebook/sam2.1-hiera-small/resolve/main/model.safetensors"},
    {"vitb_sam2", make_hiera,
     "https://huggingface.co/facebook/sam2.1-hiera-base-plus/resolve/main/model.safetensors"},
};

const BackboneEntry& find_backbone(const std::string& name) {
  for (const auto& entry : kBackbones) {
    if (name == entry.name) return entry;
  }
  std::string names;
  for (const auto& n : backbone_names()) names += (names.empty() ? "" : ", ") + n;
  throw UserError("unknown backbone '" + name + "'", "model.backbone is one of: " + names);
}

}  // namespace

const std::vector<std::string>& backbone_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& entry : kBackbones) out.emplace_back(entry.name);
    return out;
  }();
  return names;
}

std::string backbone_weights_url(const std::string& name) { return find_backbone(name).weights_url; }

std::string backbone_hugging_face_id(const std::string& name) {
  const std::string url = backbone_weights_url(name), site = "https://huggingface.co/";
  if (url.rfind(site, 0) != 0) return "";
  const std::size_t resolve = url.find("/resolve/", site.size());
  return url.substr(site.size(), resolve == std::string::npos ? std::string::npos : resolve - site.size());
}

std::string backbone_tensor_name(std::string name) {
  if (name.rfind("module.", 0) == 0) name = name.substr(7);  // saved from a DDP-wrapped model
  // lightning-pose's Lightning checkpoints: the ResNet's children by Sequential index.
  if (name.size() > 9 && name.rfind("backbone.", 0) == 0 && std::isdigit(static_cast<unsigned char>(name[9])))
    return state_name_from_lightning_pose(name);
  if (name.rfind("backbone.", 0) == 0) return name;  // mmpose, ours
  for (const char* stem : {"conv1.", "bn1.", "layer1.", "layer2.", "layer3.", "layer4.", "features."})
    if (name.rfind(stem, 0) == 0) return "backbone." + name;  // torchvision's ResNet or EfficientNet
  // Hugging Face's ViTModel (model.safetensors of facebook/dino-vits16, ...); "vit."
  // when saved from a model with a head (MAE's ViTMAEForPreTraining: its decoder.*
  // is not the encoder's). lightning-pose keeps it as vision_encoder. DINOv3ViTModel's
  // keys are layer.<i>.* and norm.*.
  // Sam2Model's (vit*_sam2): the Hiera encoder under vision_encoder.backbone., which
  // lightning-pose keeps as vision_encoder; the FPN neck is not the backbone's.
  if (name.rfind("vision_encoder.backbone.", 0) == 0) return "backbone.vision_encoder." + name.substr(24);
  if (name.rfind("vision_encoder.neck.convs.", 0) == 0) return "";
  if (name.rfind("vision_encoder.", 0) == 0) return "backbone." + name;  // SamModel's (vitb_sam)
  if (name.rfind("vit_mae.", 0) == 0) name = name.substr(8);  // lightning-pose's MAE checkpoints (vit.py)
  if (name.rfind("vit.", 0) == 0) name = name.substr(4);
  for (const char* stem : {"embeddings.", "encoder.", "layernorm.", "layer.", "norm."})
    if (name.rfind(stem, 0) == 0) return "backbone.vision_encoder." + name;
  return "";  // a classifier (fc.*) or a head: not the backbone's
}

void adapt_backbone_tensors(std::vector<StoredTensor>& tensors, const ParameterStore& store) {
  const std::string kernel = "embeddings.patch_embeddings.projection.weight";
  for (StoredTensor& t : tensors) {
    const std::string ours = backbone_tensor_name(t.name);
    if (ours == "backbone.vision_encoder.pos_embed") {
      // SAM's channels-last table [1, h, w, C], for this run's grid (SAM2's [1, C, b, b]
      // is resized on every forward instead, and loads as it is).
      const long i = store.find_parameter(ours);
      if (i < 0) continue;
      const std::vector<int>& want = store.parameters()[std::size_t(i)].shape;
      if (want.size() == 4 && t.shape.size() == 4 && t.shape[3] == want[3])
        t = resize_position_table(t, want);
      continue;
    }
    if (ours.size() < kernel.size() || ours.compare(ours.size() - kernel.size(), kernel.size(), kernel) != 0) continue;
    const long i = store.find_parameter(ours);
    if (i < 0) continue;
    const std::vector<int>& want = store.parameters()[std::size_t(i)].shape;
    if (want.size() == 4 && t.shape.size() == 4 && t.shape[0] == want[0] && t.shape[1] == want[1] &&
        t.shape[2] == t.shape[3] && want[2] == want[3] && t.shape[2] != want[2])
      t = resize_patch_embedding(t, want[2]);
  }
}

std::unique_ptr<Backbone> make_backbone(const std::string& name, ParameterStore& store, const std::string& prefix,
                                        ImageSize image) {
  return find_backbone(name).make(store, name, prefix, image);
}

}  // namespace trainer::model
