// Pretrained backbone weights (see pretrained_weights.hpp).
#include "train/pretrained_weights.hpp"

#include <cstring>  // std::memcpy
#include <fstream>  // std::ifstream
#include <map>      // std::map

#include "compute/float16.hpp"         // compute::f16: float16/bfloat16 -> float
#include "model/backbone_registry.hpp" // model::backbone_tensor_name, adapt_backbone_tensors
#include "train/checkpoint.hpp"        // load_backbone_weights (trainer .h5 files)
#include "util/error.hpp"              // UserError
#include "util/input_file.hpp"         // check_input_file
#include "util/safetensors_file.hpp"   // read_safetensors
#include "util/torch_file.hpp"         // read_torch_state_dict

namespace trainer::train {
namespace {

std::string first_bytes(const std::string& path) {
  // Checked before anything opens it: a FIFO would block the open, a device never end.
  check_input_file(path, "cannot open backbone weights '" + path + "'", "check model.backbone_weights / --init-weights");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("cannot open backbone weights '" + path + "'", "check model.backbone_weights");
  std::string head(16, '\0');
  in.read(&head[0], 16);
  head.resize(std::size_t(in.gcount()));
  return head;
}

std::vector<float> as_floats(const StoredTensor& t) {
  const std::size_t n = t.bytes.size() / bytes_per_element(t.type);
  std::vector<float> out(n);
  const char* p = t.bytes.data();
  for (std::size_t i = 0; i < n; ++i) {
    switch (t.type) {
      case StoredType::f32: std::memcpy(&out[i], p + 4 * i, 4); break;
      case StoredType::f64: { double v; std::memcpy(&v, p + 8 * i, 8); out[i] = float(v); break; }
      case StoredType::f16: { std::uint16_t v; std::memcpy(&v, p + 2 * i, 2); out[i] = compute::f16::half_to_float(v); break; }
      case StoredType::bf16: { std::uint16_t v; std::memcpy(&v, p + 2 * i, 2); out[i] = compute::f16::bf16_to_float(v); break; }
      case StoredType::i64: { std::int64_t v; std::memcpy(&v, p + 8 * i, 8); out[i] = float(v); break; }
      case StoredType::i32: { std::int32_t v; std::memcpy(&v, p + 4 * i, 4); out[i] = float(v); break; }
    }
  }
  return out;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool is_trainer_checkpoint(const std::string& head) {
  // HDF5's signature, or the checksum record before it (util/h5_checksum.hpp).
  return head.rfind("\x89HDF", 0) == 0 || head.rfind("TRAINER-CHECKSUM", 0) == 0;
}

// The tensors of a PyTorch (torch.save zip) or .safetensors file whose first bytes
// are `head`; `format` names it.
std::vector<StoredTensor> read_weight_file(const std::string& path, const std::string& head, std::string& format) {
  std::vector<StoredTensor> tensors;
  if (head.rfind("PK", 0) == 0) {
    format = "PyTorch (torch.save)";
    tensors = read_torch_state_dict(path);
  } else if (!head.empty() && (static_cast<unsigned char>(head[0]) == 0x80 || static_cast<unsigned char>(head[0]) == 0x8a)) {
    throw UserError("'" + path + "' is a PyTorch file in the legacy (pre-1.6) format",
                    "re-save it: torch.save(torch.load(path), new_path) writes the zip format the trainer reads");
  } else if (head.size() >= 8 || (path.size() > 12 && path.compare(path.size() - 12, 12, ".safetensors") == 0)) {
    // A .safetensors file starts with its header's length and then '{'.
    std::ifstream in(path, std::ios::binary);
    char brace = 0;
    in.seekg(8);
    in.get(brace);
    if (brace != '{' && path.find(".safetensors") == std::string::npos)
      throw UserError("'" + path + "' is not a weights file the trainer reads",
                      "model.backbone_weights takes a PyTorch .pth (torch.save), a .safetensors file or a trainer "
                      "checkpoint (.h5)");
    format = "safetensors";
    tensors = read_safetensors(path);
  } else {
    throw UserError("'" + path + "' is not a weights file the trainer reads (too short)",
                    "model.backbone_weights takes a PyTorch .pth (torch.save), a .safetensors file or a trainer "
                    "checkpoint (.h5)");
  }
  return tensors;
}

}  // namespace

PretrainedLoad load_pretrained_backbone(const std::string& path, model::ParameterStore& store,
                                        compute::Stream& stream) {
  const std::string head = first_bytes(path);
  PretrainedLoad result;
  if (is_trainer_checkpoint(head)) {
    result.format = "trainer checkpoint";
    result.tensors = load_backbone_weights(path, store, stream);
    return result;
  }
  std::vector<StoredTensor> tensors = read_weight_file(path, head, result.format);

  model::adapt_backbone_tensors(tensors, store);  // DINOv2's patch kernels, resized as lightning-pose does
  StoredTensorLoad how;  // the backbone, by the names of torchvision, mmpose and lightning-pose
  how.path = path;
  how.what = "backbone";
  how.backbone_only = true;
  how.our_name = model::backbone_tensor_name;
  how.hint = "are these weights for another backbone (model.backbone)?";
  how.none_message = "holds no tensor of a ResNet backbone (" + std::to_string(tensors.size()) +
                     " tensors, none named like conv1.weight, layer1.0.conv1.weight or backbone.*)";
  how.none_hint = "give a torchvision ResNet state dict, an mmpose checkpoint or a trainer checkpoint";
  result.tensors = load_stored_tensors(tensors, how, store, stream, &result.ignored);
  return result;
}

PretrainedLoad load_vit_mae_checkpoint(const std::string& path, model::ParameterStore& store,
                                       compute::Stream& stream) {
  const std::string head = first_bytes(path);
  if (is_trainer_checkpoint(head))
    throw UserError("model.backbone_checkpoint '" + path + "' is a trainer checkpoint, not a ViT-MAE file",
                    "give a trainer checkpoint as model.backbone_weights (or --init-weights)");
  PretrainedLoad result;
  const std::vector<StoredTensor> tensors = read_weight_file(path, head, result.format);
  // lightning-pose's load_vit_backbone_checkpoint: a key starting with vit_mae., with
  // vit_mae.vit. taken off, is the encoder's; load_state_dict(strict=False) of those
  // whose name and shape match.
  static const std::string kPrefix = "vit_mae.vit.";
  StoredTensorLoad how;
  how.path = path;
  how.what = "backbone";
  how.backbone_only = true;
  how.lenient = true;
  how.our_name = [](const std::string& name) {
    return name.rfind(kPrefix, 0) == 0 ? "backbone.vision_encoder." + name.substr(kPrefix.size()) : std::string();
  };
  how.none_message = "holds no vit_mae.vit.* tensor that fits this encoder (lightning-pose's ViT-MAE checkpoints "
                     "name the encoder's tensors vit_mae.vit.embeddings.*, vit_mae.vit.encoder.*, ...)";
  how.none_hint = "model.backbone_checkpoint takes a ViT-MAE checkpoint of lightning-pose's layout for vitb_imagenet";
  result.tensors = load_stored_tensors(tensors, how, store, stream, &result.ignored);
  return result;
}

int load_stored_tensors(const std::vector<StoredTensor>& tensors, const StoredTensorLoad& how,
                        model::ParameterStore& store, compute::Stream& stream, int* ignored) {
  const std::string& path = how.path;
  // Where each tensor to load lives in the store.
  enum class Kind { parameter, buffer, counter };
  struct Target { Kind kind; std::size_t index; };
  const auto wanted = [&](model::ParamGroup g) { return !how.backbone_only || g == model::ParamGroup::backbone; };
  std::map<std::string, Target> targets;
  for (std::size_t i = 0; i < store.parameters().size(); ++i)
    if (wanted(store.parameters()[i].group)) targets[store.parameters()[i].name] = {Kind::parameter, i};
  for (std::size_t i = 0; i < store.buffers().size(); ++i)
    if (wanted(store.buffers()[i].group)) targets[store.buffers()[i].name] = {Kind::buffer, i};
  for (std::size_t i = 0; i < store.counters().size(); ++i)
    if (!how.backbone_only || store.counters()[i].name.rfind("backbone.", 0) == 0)
      targets[store.counters()[i].name] = {Kind::counter, i};

  std::map<std::string, bool> loaded;
  for (const StoredTensor& t : tensors) {
    const std::string ours = how.our_name(t.name);
    if (ours.empty()) {
      if (ignored) ++*ignored;  // a classifier's, a head's, a loss's
      continue;
    }
    const auto it = targets.find(ours);
    if (it == targets.end() && how.lenient) {
      if (ignored) ++*ignored;
      continue;
    }
    if (it == targets.end())  // e.g. layer1.2.* of a ResNet-34 file for a ResNet-18
      throw UserError("'" + path + "' has " + how.what + " tensor '" + t.name + "', which " + ours +
                          " would be, but this " + how.what + " has no such tensor",
                      how.hint);
    const Target& target = it->second;
    if (target.kind == Kind::counter) {
      if (!t.bytes.empty()) store.counters()[target.index].value = std::int64_t(as_floats(t).at(0));
      loaded[ours] = true;
      continue;
    }
    const std::vector<int>& shape = target.kind == Kind::parameter ? store.parameters()[target.index].shape
                                                                   : store.buffers()[target.index].shape;
    if (std::vector<std::int64_t>(shape.begin(), shape.end()) != t.shape && how.lenient) {
      if (ignored) ++*ignored;  // another keypoint count's head, say
      continue;
    }
    if (std::vector<std::int64_t>(shape.begin(), shape.end()) != t.shape)
      throw UserError("'" + path + "': tensor '" + t.name + "' has shape " + shape_text(t.shape) + " but the " +
                          how.what + "'s " + ours + " is " +
                          shape_text(std::vector<std::int64_t>(shape.begin(), shape.end())),
                      how.hint);
    const std::vector<float> values = as_floats(t);
    if (target.kind == Kind::parameter) store.upload_param(target.index, values, stream);
    else store.upload_buffer(target.index, values, stream);
    loaded[ours] = true;
  }
  std::string missing;
  int missing_count = 0;
  for (const auto& [name, target] : targets) {
    if (target.kind == Kind::counter || loaded.count(name)) continue;
    if (++missing_count <= 3) missing += (missing.empty() ? "" : ", ") + name;
  }
  if (loaded.empty()) throw UserError("'" + path + "' " + how.none_message, how.none_hint);
  if (missing_count > 0 && !how.lenient)
    throw UserError("'" + path + "' lacks " + std::to_string(missing_count) + " of the " + how.what + "'s tensors (" +
                        missing + (missing_count > 3 ? ", ..." : "") + ")",
                    how.hint);
  return int(loaded.size());
}

}  // namespace trainer::train
