// Hugging Face weight files (see hf_weights.hpp).
#include "app/hf_weights.hpp"

#include <algorithm>   // std::sort
#include <filesystem>  // directory_iterator, is_directory
#include <vector>      // std::vector

#include "model/backbone_registry.hpp"  // backbone_hugging_face_id, backbone_weights_url
#include "util/error.hpp"               // UserError

namespace trainer::app {
namespace {

namespace fs = std::filesystem;

// The files transformers saves, in the order it prefers them.
constexpr const char* kWeightFiles[] = {"model.safetensors", "pytorch_model.bin"};

bool is_dir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

std::string weights_in(const std::string& dir) {
  std::error_code ec;
  for (const char* name : kWeightFiles)
    if (fs::is_regular_file(dir + "/" + name, ec)) return dir + "/" + name;
  return "";
}

// A model's cache folder (models--org--name): its snapshots, newest name last, so
// the choice does not depend on the directory order.
std::string weights_in_snapshots(const std::string& model_dir) {
  std::error_code ec;
  std::vector<std::string> snapshots;
  for (fs::directory_iterator it(model_dir + "/snapshots", ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory(ec)) snapshots.push_back(it->path().string());
  std::sort(snapshots.begin(), snapshots.end());
  for (auto it = snapshots.rbegin(); it != snapshots.rend(); ++it) {
    const std::string file = weights_in(*it);
    if (!file.empty()) return file;
  }
  return "";
}

// "facebook/dino-vits16" -> "models--facebook--dino-vits16".
std::string cache_folder_name(const std::string& model_id) {
  std::string name = "models--" + model_id;
  for (std::size_t at = name.find('/'); at != std::string::npos; at = name.find('/', at)) name.replace(at, 1, "--");
  return name;
}

std::string weights_under(const std::string& dir, const std::string& model_id) {
  for (const std::string& found :
       {weights_in(dir), weights_in_snapshots(dir), weights_in_snapshots(dir + "/" + cache_folder_name(model_id)),
        weights_in_snapshots(dir + "/hub/" + cache_folder_name(model_id))})
    if (!found.empty()) return found;
  return "";
}

}  // namespace

std::string hugging_face_weights(const std::string& given, const std::string& backbone, const Env& env) {
  const std::string model_id = model::backbone_hugging_face_id(backbone);
  if (model_id.empty()) return given;
  if (!given.empty()) {
    if (!is_dir(given)) return given;
    const std::string found = weights_under(given, model_id);
    if (found.empty())
      throw UserError("model.backbone_weights: '" + given + "' holds no model.safetensors of " + model_id +
                          " (model.backbone = " + backbone + ")",
                      "download " + model::backbone_weights_url(backbone) +
                          " and give the file, its folder, or the Hugging Face cache folder that holds " +
                          cache_folder_name(model_id));
    return found;
  }
  std::vector<std::string> caches;
  if (auto v = env_get(env, "HF_HUB_CACHE")) caches.push_back(*v);
  if (auto v = env_get(env, "HF_HOME")) caches.push_back(*v + "/hub");
  if (auto v = env_get(env, "XDG_CACHE_HOME")) caches.push_back(*v + "/huggingface/hub");
  if (auto v = env_get(env, "HOME")) caches.push_back(*v + "/.cache/huggingface/hub");
  for (const auto& cache : caches) {
    const std::string found = weights_in_snapshots(cache + "/" + cache_folder_name(model_id));
    if (!found.empty()) return found;
  }
  return "";
}

}  // namespace trainer::app
