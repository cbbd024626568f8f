// The ViTs' weights from Hugging Face's file layout (app/hf_weights.hpp): a given
// file, a snapshot folder, a model's cache folder, a cache root, the cache named by
// the environment; a folder without the file names the model id and the file.
#include <catch2/catch.hpp>

#include <filesystem>  // create_directories, remove_all
#include <fstream>     // std::ofstream
#include <string>      // std::string
#include <unistd.h>    // getpid

#include "app/hf_weights.hpp"
#include "model/backbone_registry.hpp"
#include "util/error.hpp"

using namespace trainer;
namespace fs = std::filesystem;

namespace {
struct Scratch {
  std::string root = "hf_weights_test." + std::to_string(::getpid());
  Scratch() { fs::create_directories(root); }
  ~Scratch() { fs::remove_all(root); }
  std::string file(const std::string& relative) {
    const std::string path = root + "/" + relative;
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << "x";
    return path;
  }
};
}  // namespace

TEST_CASE("Hugging Face ids come from the backbone table", "[app][weights][vit]") {
  CHECK(model::backbone_hugging_face_id("vits_dino") == "facebook/dino-vits16");
  CHECK(model::backbone_hugging_face_id("vitb_dino") == "facebook/dino-vitb16");
  CHECK(model::backbone_hugging_face_id("vits_dinov2") == "facebook/dinov2-small");
  CHECK(model::backbone_hugging_face_id("vitb_dinov2") == "facebook/dinov2-base");
  CHECK(model::backbone_hugging_face_id("vits_dinov3") == "facebook/dinov3-vits16-pretrain-lvd1689m");
  CHECK(model::backbone_hugging_face_id("vitb_dinov3") == "facebook/dinov3-vitb16-pretrain-lvd1689m");
  CHECK(model::backbone_hugging_face_id("vitb_imagenet") == "facebook/vit-mae-base");
  CHECK(model::backbone_hugging_face_id("vitb_sam") == "facebook/sam-vit-base");
  CHECK(model::backbone_hugging_face_id("resnet50").empty());
  // SamModel's vision encoder is the backbone; its prompt encoder and mask decoder are not.
  CHECK(model::backbone_tensor_name("vision_encoder.layers.0.attn.qkv.weight") ==
        "backbone.vision_encoder.layers.0.attn.qkv.weight");
  CHECK(model::backbone_tensor_name("mask_decoder.iou_token.weight").empty());
  CHECK(model::backbone_tensor_name("shared_image_embedding.positional_embedding").empty());
  // ViTModel's names (and a classifier's "vit." ones) are lightning-pose's vision_encoder.
  CHECK(model::backbone_tensor_name("embeddings.cls_token") == "backbone.vision_encoder.embeddings.cls_token");
  CHECK(model::backbone_tensor_name("vit.encoder.layer.3.output.dense.bias") ==
        "backbone.vision_encoder.encoder.layer.3.output.dense.bias");
  CHECK(model::backbone_tensor_name("layernorm.weight") == "backbone.vision_encoder.layernorm.weight");
  CHECK(model::backbone_tensor_name("backbone.vision_encoder.layernorm.weight") ==
        "backbone.vision_encoder.layernorm.weight");
  CHECK(model::backbone_tensor_name("pooler.dense.weight").empty());
}

TEST_CASE("hugging_face_weights finds model.safetensors in the Hugging Face layouts", "[app][weights][vit]") {
  Scratch s;
  const std::string snapshot = "hub/models--facebook--dino-vits16/snapshots/";
  s.file(snapshot + "aaa/pytorch_model.bin");
  const std::string newest = s.file(snapshot + "bbb/model.safetensors");
  // A file, and any backbone whose weights are not Hugging Face's, pass through.
  CHECK(app::hugging_face_weights(newest, "vits_dino", {}) == newest);
  CHECK(app::hugging_face_weights(s.root, "resnet50", {}) == s.root);
  // The snapshot, the model's folder, the cache root and its parent.
  CHECK(app::hugging_face_weights(s.root + "/" + snapshot + "bbb", "vits_dino", {}) == newest);
  CHECK(app::hugging_face_weights(s.root + "/hub/models--facebook--dino-vits16", "vits_dino", {}) == newest);
  CHECK(app::hugging_face_weights(s.root + "/hub", "vits_dino", {}) == newest);
  CHECK(app::hugging_face_weights(s.root, "vits_dino", {}) == newest);
  // Nothing given: the caches the environment names, else none (a random start).
  CHECK(app::hugging_face_weights("", "vits_dino", {{"HF_HOME", s.root}}) == newest);
  CHECK(app::hugging_face_weights("", "vits_dino", {{"HF_HUB_CACHE", s.root + "/hub"}}) == newest);
  CHECK(app::hugging_face_weights("", "vits_dino", {{"HOME", s.root + "/nowhere"}}).empty());
  // Another model's folder lacks vitb_dino's file: the error names the id and the file.
  try {
    app::hugging_face_weights(s.root, "vitb_dino", {});
    FAIL("no error");
  } catch (const UserError& e) {
    CHECK(std::string(e.what()).find("holds no model.safetensors of facebook/dino-vitb16") != std::string::npos);
    CHECK(e.hint().find("https://huggingface.co/facebook/dino-vitb16/resolve/main/model.safetensors") !=
          std::string::npos);
  }
  // DINOv3's gated checkpoint, once downloaded, sits in the same layout under its id.
  const std::string v3 = s.file("hub/models--facebook--dinov3-vits16-pretrain-lvd1689m/snapshots/ccc/model.safetensors");
  CHECK(app::hugging_face_weights("", "vits_dinov3", {{"HF_HOME", s.root}}) == v3);
}
