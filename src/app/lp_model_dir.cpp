// The run folder as a lightning-pose model directory (see lp_model_dir.hpp).
#include "app/lp_model_dir.hpp"

#include <chrono>      // std::chrono::system_clock
#include <cstdio>      // std::snprintf
#include <algorithm>   // std::sort
#include <filesystem>  // std::filesystem::directory_iterator, remove
#include <utility>     // std::pair
#include <vector>      // std::vector

#include "app/config_parse.hpp"            // config_to_yaml
#include "app/output_files.hpp"            // make_directories
#include "app/run_options.hpp"             // checkpoint_model_spec
#include "compute/backend.hpp"             // make_cpu_backend
#include "model/lightning_pose_names.hpp"  // lightning_pose_state_name
#include "model/make_model.hpp"            // make_pose_model
#include "train/checkpoint.hpp"            // load_training_state, load_model
#include "util/atomic_write.hpp"           // write_file_atomically
#include "util/error.hpp"                  // UserError
#include "util/torch_writer.hpp"           // PickleValue, write_torch_file

namespace trainer::app {
namespace {

// The Lightning version the checkpoint claims: recent enough that Lightning runs
// none of its migrations of old checkpoints (which expect keys such as `loops`).
constexpr const char* kLightningVersion = "2.5.0";

StoredTensor int64_scalar(std::int64_t value) {
  StoredTensor t;
  t.type = StoredType::i64;
  t.bytes.assign(reinterpret_cast<const char*>(&value), sizeof value);
  return t;
}

// The network's tensors under lightning-pose's names, in state_dict order.
PickleValue lightning_pose_state_dict(const Config& config, const std::string& h5_checkpoint,
                                      const train::TrainingState& state) {
  auto backend = compute::make_cpu_backend(1);
  auto& stream = backend->default_stream();
  const std::string model_type = state.model_type.empty() ? "heatmap" : state.model_type;
  const auto net = model::make_pose_model(*backend, model_type,
                                          checkpoint_model_spec(state, config));
  auto& store = net->store();
  train::load_model(h5_checkpoint, store, stream);
  PickleValue dict = PickleValue::ordered_dict();
  std::vector<std::pair<std::string, StoredTensor>> aliases;  // after the tensors, as the ModuleList registers them
  const bool has_w_pre = model::crnn_has_w_pre(store.state_dict_names());
  for (const auto& key : store.state_dict_order()) {
    using Kind = model::ParameterStore::Kind;
    std::string name;
    StoredTensor tensor;
    if (key.kind == Kind::parameter) {
      const auto& e = store.parameters()[key.index];
      name = e.name;
      tensor = float32_tensor({}, e.shape, store.download_param(key.index, stream));
    } else if (key.kind == Kind::buffer) {
      const auto& e = store.buffers()[key.index];
      name = e.name;
      tensor = float32_tensor({}, e.shape, store.download_buffer(key.index, stream));
    } else {
      const auto& c = store.counters()[key.index];
      name = c.name;
      tensor = int64_scalar(c.value);
    }
    const std::string lp_name = model::lightning_pose_state_name(name);
    TRAINER_ASSERT(!lp_name.empty(), "no lightning-pose name for " << name);
    for (const auto& alias : model::lightning_pose_state_aliases(name, has_w_pre)) aliases.emplace_back(alias, tensor);
    dict.set(lp_name, PickleValue::tensor(std::move(tensor)));
  }
  for (auto& [name, tensor] : aliases) dict.set(name, PickleValue::tensor(std::move(tensor)));
  return dict;
}

// What lightning-pose's HeatmapTracker takes (and save_hyperparameters() stores), so
// that Lightning's load_from_checkpoint can build the model. `pretrained` is false:
// the state_dict replaces the backbone's weights anyway, and true would have
// torchvision download ImageNet weights while loading.
PickleValue hyper_parameters(const Config& config, const train::TrainingState& state) {
  const bool context = state.model_type == "heatmap_mhcrnn";
  PickleValue milestones = PickleValue::list();
  for (int m : config.training.lr_scheduler_milestones) milestones.append(PickleValue::integer(m));
  PickleValue multisteplr = PickleValue::dict();
  multisteplr.set("milestones", milestones).set("gamma", PickleValue::real(config.training.lr_scheduler_gamma));
  PickleValue scheduler_params = PickleValue::dict();
  scheduler_params.set("multisteplr", multisteplr);
  PickleValue optimizer_params = PickleValue::dict();
  optimizer_params.set("learning_rate", PickleValue::real(config.training.learning_rate));
  PickleValue h = PickleValue::dict();
  h.set("num_keypoints", PickleValue::integer(state.num_keypoints))
      .set("num_targets", PickleValue::integer(2 * state.num_keypoints))
      .set("backbone", PickleValue::string(state.backbone))
      .set("downsample_factor", PickleValue::integer(state.downsample_factor))
      .set("pretrained", PickleValue::boolean(false))
      .set("torch_seed", PickleValue::integer(std::int64_t(config.training.rng_seed_model_pt)))
      .set("optimizer", PickleValue::string(config.training.optimizer))
      .set("optimizer_params", optimizer_params)
      .set("lr_scheduler", PickleValue::string("multisteplr"))
      .set("lr_scheduler_params", scheduler_params)
      .set("do_context", PickleValue::boolean(context))
      .set("image_size", PickleValue::integer(config.data.image_resize_height))
      .set("model_type", PickleValue::string(context ? "heatmap_mhcrnn" : "heatmap"));
  return h;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

bool has_lightning_pose_checkpoint(const Config& config) {
  return config.model.model_type == "heatmap" || config.model.model_type == "heatmap_mhcrnn";
}

namespace {

// The Lightning checkpoint of `h5_checkpoint` as `folder`/`file_name`, atomically;
// `epoch` is the one Lightning puts into the name and the file.
void write_ckpt(const Config& config, const std::string& h5_checkpoint, const train::TrainingState& state,
                const std::string& path, int epoch) {
  PickleValue root = PickleValue::dict();
  root.set("epoch", PickleValue::integer(epoch))
      .set("global_step", PickleValue::integer(state.global_step))
      .set("pytorch-lightning_version", PickleValue::string(kLightningVersion))
      .set("state_dict", lightning_pose_state_dict(config, h5_checkpoint, state))
      .set("callbacks", PickleValue::dict())
      .set("optimizer_states", PickleValue::list())
      .set("lr_schedulers", PickleValue::list())
      .set("hparams_name", PickleValue::string("kwargs"))
      .set("hyper_parameters", hyper_parameters(config, state));
  write_torch_file(path, root);
}

train::TrainingState heatmap_state(const std::string& h5_checkpoint) {
  train::TrainingState state = train::load_training_state(h5_checkpoint);
  if (!state.model_type.empty() && state.model_type != "heatmap" && state.model_type != "heatmap_mhcrnn")
    throw UserError("'" + h5_checkpoint + "' is a " + state.model_type + " model",
                    "heatmap and heatmap_mhcrnn models are written as lightning-pose checkpoints");
  return state;
}

}  // namespace

std::string write_lightning_pose_checkpoint(const Config& config, const std::string& h5_checkpoint,
                                            const std::string& version_dir) {
  const train::TrainingState state = heatmap_state(h5_checkpoint);
  // Lightning names a checkpoint by the epoch it was saved in (0-based) and the step: the
  // last one completed, or the one a validation inside it (val_check_interval) saved from.
  const int epoch = state.batches_into_epoch > 0 ? state.epochs_completed
                    : state.epochs_completed > 0 ? state.epochs_completed - 1
                                                 : 0;
  const std::string folder = version_dir + "/checkpoints";
  const std::string path =
      folder + "/epoch=" + std::to_string(epoch) + "-step=" + std::to_string(state.global_step) + "-best.ckpt";
  make_directories(folder);
  write_ckpt(config, h5_checkpoint, state, path, epoch);

  // One best checkpoint, as Lightning's ModelCheckpoint(save_top_k=1) keeps.
  std::error_code ec;
  for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const bool best = name.size() > 10 && name.compare(name.size() - 10, 10, "-best.ckpt") == 0;
    if (best && it->path().string() != path) std::filesystem::remove(it->path(), ec);
  }
  return path;
}

std::vector<std::string> write_periodic_lightning_pose_checkpoints(const Config& config,
                                                                   const std::string& checkpoints_dir,
                                                                   const std::string& version_dir) {
  // checkpoints/epoch=<E>-step=<S>.h5, as the loop names them.
  std::vector<std::pair<std::string, int>> found;  // stem, epoch
  std::error_code ec;
  for (std::filesystem::directory_iterator it(checkpoints_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    int epoch = 0;
    long step = 0;
    int used = 0;
    if (name.size() < 3 || name.compare(name.size() - 3, 3, ".h5") != 0) continue;
    if (std::sscanf(name.c_str(), "epoch=%d-step=%ld.h5%n", &epoch, &step, &used) != 2 ||
        std::size_t(used) != name.size())
      continue;
    found.emplace_back(name.substr(0, name.size() - 3), epoch);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> written;
  if (found.empty()) return written;
  const std::string folder = version_dir + "/checkpoints";
  make_directories(folder);
  for (const auto& [stem, epoch] : found) {
    const std::string h5 = checkpoints_dir + "/" + stem + ".h5";
    const std::string path = folder + "/" + stem + ".ckpt";
    if (std::filesystem::exists(path, ec)) continue;  // an earlier run (resumed) wrote it
    write_ckpt(config, h5, heatmap_state(h5), path, epoch);
    written.push_back(path);
  }
  return written;
}

std::string train_status_json(const std::string& status, int completed_epochs, int total_epochs) {
  char progress[160];
  std::snprintf(progress, sizeof progress, "{\"completed\": %d, \"total\": %d, \"timestamp\": %.3f}",
                completed_epochs, total_epochs, now_seconds());
  return "{\"status\": \"" + status + "\", \"progress\": " + progress + "}\n";
}

void write_train_status(const std::string& run_dir, const std::string& status, int completed_epochs,
                        int total_epochs) {
  write_file_atomically(run_dir + "/train_status.json", train_status_json(status, completed_epochs, total_epochs));
}

void write_lightning_pose_config(const std::string& run_dir, const Config& config) {
  write_file_atomically(run_dir + "/config.yaml", config_to_yaml(config));
}

}  // namespace trainer::app
