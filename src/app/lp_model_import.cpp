// A lightning-pose model directory opened here (see lp_model_import.hpp).
#include "app/lp_model_import.hpp"

#include <sys/stat.h>  // stat

#include <boost/program_options.hpp>  // options_description (no own options here)
#include <filesystem>                 // std::filesystem::directory_iterator
#include <algorithm>                  // std::sort
#include <map>                        // std::map (checkpoints by version)
#include <regex>                      // std::regex_search
#include <vector>                     // std::vector

#include "app/config_parse.hpp"            // parse_command_line, config_to_ini
#include "app/run_options.hpp"             // checkpoint_model_spec
#include "compute/backend.hpp"             // make_cpu_backend
#include "model/lightning_pose_names.hpp"  // state_name_from_lightning_pose
#include "model/make_model.hpp"            // make_pose_model
#include "train/checkpoint.hpp"            // save_checkpoint, TrainingState
#include "train/pretrained_weights.hpp"    // load_stored_tensors
#include "util/error.hpp"                  // UserError
#include "util/torch_file.hpp"             // read_torch_state_dict

namespace trainer::app {
namespace {

namespace fs = std::filesystem;

bool exists_as(const std::string& path, bool dir) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && (dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode));
}

long step_of(const std::string& name) {
  std::smatch m;
  return std::regex_search(name, m, std::regex("step=(\\d+)")) ? std::stol(m[1]) : -1;
}

// lightning_pose.utils.io.ckpt_path_from_base_path: the newest version folder's
// *-best.ckpt, else the checkpoint there with the highest step.
std::string find_checkpoint(const std::string& dir, const std::string& model_name) {
  const fs::path root = fs::path(dir) / "tb_logs" / model_name;
  std::map<long, std::vector<fs::path>> by_version;
  std::error_code ec;
  for (fs::directory_iterator v(root, ec), end; !ec && v != end; v.increment(ec)) {
    const std::string name = v->path().filename().string();
    if (name.rfind("version_", 0) != 0) continue;
    long version = -1;
    try {
      version = std::stol(name.substr(8));
    } catch (const std::exception&) {
      continue;
    }
    std::error_code inner;
    for (fs::directory_iterator c(v->path() / "checkpoints", inner), cend; !inner && c != cend; c.increment(inner))
      if (c->path().extension() == ".ckpt") by_version[version].push_back(c->path());
  }
  if (by_version.empty())
    throw UserError("predict: lightning-pose model directory '" + dir + "' has no checkpoint (" +
                        (root / "version_*" / "checkpoints" / "*.ckpt").string() + ")",
                    "is model.model_name in its config.yaml the name it was trained under?");
  const auto& newest = by_version.rbegin()->second;
  for (const auto& p : newest)
    if (p.filename().string().size() > 10 && p.filename().string().find("-best.ckpt") != std::string::npos)
      return p.string();
  fs::path best = newest.front();
  for (const auto& p : newest)
    if (step_of(p.filename().string()) > step_of(best.filename().string())) best = p;
  return best.string();
}

// Whether `derived` exists and is at least as new as `source`.
bool up_to_date(const std::string& derived, const std::string& source) {
  std::error_code a, b;
  const auto d = fs::last_write_time(derived, a), s = fs::last_write_time(source, b);
  return !a && !b && d >= s;
}

// The .ckpt's tensors into a fresh model of the configuration's description, saved
// as a trainer checkpoint at `out`.
void convert(const std::string& ckpt, const Config& config, const std::string& out) {
  if (config.model.model_type != "heatmap" && config.model.model_type != "heatmap_mhcrnn")
    throw UserError("predict: lightning-pose " + config.model.model_type + " checkpoints are not read ('" + ckpt +
                        "')",
                    "heatmap and heatmap_mhcrnn models are; predict this one with lightning-pose (`litpose predict`)");
  train::TrainingState state;
  state.model_type = config.model.model_type;
  state.backbone = config.model.backbone;
  state.num_keypoints = config.data.num_keypoints;
  state.downsample_factor = config.data.downsample_factor;
  state.config_text = config_to_ini(config);
  state.has_optimizer = false;
  if (state.num_keypoints <= 0)
    throw UserError("predict: the config.yaml beside '" + ckpt + "' gives no data.num_keypoints",
                    "lightning-pose writes it into every model directory: is this config.yaml its own?");
  auto backend = compute::make_cpu_backend(1);
  auto& stream = backend->default_stream();
  const auto net = model::make_pose_model(*backend, state.model_type,
                                          checkpoint_model_spec(state, config));
  auto& store = net->store();
  train::StoredTensorLoad how;  // every tensor of the model, by lightning-pose's names
  how.path = ckpt;
  how.our_name = model::state_name_from_lightning_pose;  // others (the losses' buffers, ...) are not the model's
  how.hint = "does its config.yaml (model.backbone, data.num_keypoints, data.downsample_factor) describe it?";
  how.none_message = "holds no tensor named as lightning-pose names a " + config.model.model_type +
                     " model's (backbone.0.weight, ...)";
  how.none_hint = "is it a lightning-pose checkpoint of a " + config.model.model_type + " model?";
  train::load_stored_tensors(read_torch_state_dict(ckpt), how, store, stream);
  train::save_checkpoint(out, store, nullptr, state, stream);
}

// A model folder's configuration, for what describes the model (its type, backbone,
// keypoints, the name its checkpoints are under), with `user_args`' configuration
// changes. lightning-pose saves config.yaml unresolved, so its example's data folders
// stay `${LP_ROOT_PATH:}/data/...`, a resolver of lightning-pose's installation; the
// model needs none of them, so they are cleared first (model_folder_overrides).
Config model_folder_config(const std::string& config_yaml, const Args& user_args = {}) {
  Args args = {"--config", config_yaml};
  const Args user = configuration_args("predict", user_args);
  args.insert(args.end(), user.begin(), user.end());
  const boost::program_options::options_description none("");
  return parse_command_line("predict", with_leading_overrides(args, model_folder_overrides(false)), none).config;
}

}  // namespace

std::vector<std::string> model_folder_overrides(bool labelled_frames) {
  std::vector<std::string> out = {"data.video_dir=null", "eval.test_videos_directory=null", "model.losses_to_use=[]"};
  if (!labelled_frames) out.push_back("data.data_dir=null");
  return out;
}

bool is_lightning_pose_model_dir(const std::string& dir) {
  return exists_as(dir + "/config.yaml", false) && exists_as(dir + "/tb_logs", true) &&
         !exists_as(dir + "/checkpoints", true);
}

std::string weights_file_of(const std::string& path) {
  if (!exists_as(path, true)) return path;
  for (const char* name : {"best.h5", "last.h5"})
    if (exists_as(path + "/checkpoints/" + name, false)) return path + "/checkpoints/" + name;
  if (!is_lightning_pose_model_dir(path)) return path;
  return find_checkpoint(path, model_folder_config(path + "/config.yaml").model.model_name);
}

std::string lightning_pose_ckpt_of(const std::string& path) {
  if (!exists_as(path, true)) {
    if (!exists_as(path, false))
      throw UserError("model.checkpoint: cannot open '" + path + "'", "give a lightning-pose .ckpt or model directory");
    return path;
  }
  if (exists_as(path + "/config.yaml", false) && exists_as(path + "/tb_logs", true))
    return find_checkpoint(path, model_folder_config(path + "/config.yaml").model.model_name);
  std::vector<std::string> found;  // lightning-pose: glob(os.path.join(ckpt, '**', '*.ckpt'), recursive=True)[0]
  std::error_code ec;
  for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".ckpt" && it->is_regular_file()) found.push_back(it->path().string());
  if (found.empty())
    throw UserError("model.checkpoint: no .ckpt file in '" + path + "'", "give a lightning-pose .ckpt or model directory");
  std::sort(found.begin(), found.end());
  return found.front();
}

LightningPoseWeights load_lightning_pose_weights(const std::string& ckpt, model::ParameterStore& store,
                                                 compute::Stream& stream) {
  train::StoredTensorLoad how;
  how.path = ckpt;
  how.our_name = model::state_name_from_lightning_pose;
  how.lenient = true;
  how.none_message = "holds no tensor that fits this model under lightning-pose's names (backbone.0.weight, ...)";
  how.none_hint = "model.checkpoint takes a lightning-pose checkpoint of a model with this backbone";
  LightningPoseWeights got;
  got.loaded = train::load_stored_tensors(read_torch_state_dict(ckpt), how, store, stream, &got.skipped);
  const std::size_t tensors = store.parameters().size() + store.buffers().size() + store.counters().size();
  got.kept = int(tensors) - got.loaded;
  return got;
}

LightningPoseModel open_lightning_pose_model(const std::string& dir, const Args& user_args) {
  LightningPoseModel m;
  m.config_yaml = dir + "/config.yaml";
  const Config config = model_folder_config(m.config_yaml, user_args);
  m.ckpt = find_checkpoint(dir, config.model.model_name);
  m.checkpoint = m.ckpt + ".trainer.h5";
  if (!up_to_date(m.checkpoint, m.ckpt)) convert(m.ckpt, config, m.checkpoint);
  return m;
}

}  // namespace trainer::app
