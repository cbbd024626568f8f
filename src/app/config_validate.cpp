// Combinations of configuration keys that are each valid alone but impossible
// together. Each error names every key involved and where its value came from.
#include <algorithm>  // std::find
#include <set>        // std::set
#include <string>     // std::string

#include "app/config_keys.hpp"    // validate_combinations, OriginOf
#include "app/config_values.hpp"  // format_real
#include "util/error.hpp"         // UserError

namespace trainer::app::config_detail {
namespace {

// Names keys in messages as the user wrote them, with where each was set.
class KeyNames {
 public:
  explicit KeyNames(const OriginOf& origin_of) : origin_of_(origin_of) {}
  // "training.lr_scheduler_params.multisteplr.milestones" for a YAML config, else the INI name.
  std::string name(const std::string& key) const { return origin_of_(key).written_as; }
  // "<name> (from <where>)".
  std::string at(const std::string& key) const {
    const KeyOrigin origin = origin_of_(key);
    return origin.written_as + " (from " + origin.where + ")";
  }
  // "<name> = <value> (from <where>)".
  std::string is(const std::string& key, const std::string& value) const {
    const KeyOrigin origin = origin_of_(key);
    return origin.written_as + " = " + value + " (from " + origin.where + ")";
  }

 private:
  const OriginOf& origin_of_;
};

}  // namespace

void validate_combinations(const Config& c, const OriginOf& origin_of) {
  const KeyNames k(origin_of);
  const TrainingConfig& t = c.training;
  if (t.val_prob && t.train_prob + *t.val_prob > 1.0 + 1e-9) {
    throw UserError(k.is("training.train_prob", format_real(t.train_prob)) + " plus " +
                        k.is("training.val_prob", format_real(*t.val_prob)) + " is more than 1",
                    "the test set gets 1 - train_prob - val_prob of the frames; lower one of them, e.g. " +
                        k.name("training.train_prob") + " 0.8 and " + k.name("training.val_prob") + " 0.1");
  }
  // min_epochs > max_epochs is fine, as in Lightning: max_epochs ends the run, and
  // lightning-pose's own configs pair min_epochs 300 with a lowered max_epochs.
  for (std::size_t i = 1; i < t.lr_scheduler_milestones.size(); ++i) {
    if (t.lr_scheduler_milestones[i] <= t.lr_scheduler_milestones[i - 1]) {
      throw UserError(k.at("training.lr_scheduler_milestones") + " must be strictly increasing, but " +
                          std::to_string(t.lr_scheduler_milestones[i]) + " follows " +
                          std::to_string(t.lr_scheduler_milestones[i - 1]),
                      "list the epochs in increasing order, e.g. [150, 200, 250]");
    }
  }
  if (t.optimizer == "Adam" && t.weight_decay && *t.weight_decay != 0.0) {
    throw UserError(k.is("training.weight_decay", format_real(*t.weight_decay)) + " has no effect with " +
                        k.is("training.optimizer", "Adam"),
                    "set " + k.name("training.optimizer") + " to AdamW to use weight decay, or " +
                        k.name("training.weight_decay") + " to auto");
  }

  const DataConfig& d = c.data;
  if (!d.csv_file.empty() && !d.data_files.empty()) {
    throw UserError(k.at("data.csv_file") + " and " + k.at("data.data_files") + " are both set",
                    "csv_file (with data_dir) imports a lightning-pose CSV project; data_files names HDF5 files "
                    "made by `trainer import`: give one of them");
  }
  if (d.num_keypoints > 0 && !d.keypoint_names.empty() &&
      static_cast<int>(d.keypoint_names.size()) != d.num_keypoints) {
    throw UserError(k.at("data.keypoint_names") + " lists " + std::to_string(d.keypoint_names.size()) +
                        " names but " + k.is("data.num_keypoints", std::to_string(d.num_keypoints)),
                    "make them agree, or set " + k.name("data.num_keypoints") + " to 0 to count the names");
  }
  std::set<std::string> seen;
  for (const auto& name : d.keypoint_names) {
    if (!seen.insert(name).second) {
      throw UserError(k.at("data.keypoint_names") + " lists '" + name + "' twice", "every keypoint needs its own name");
    }
  }

  // Unsupervised losses: videos to read, views for pca_multiview.
  const auto& losses = c.model.losses_to_use;
  const auto uses = [&](const char* name) { return std::find(losses.begin(), losses.end(), name) != losses.end(); };
  if (!losses.empty()) {
    if (d.video_dir.empty())
      throw UserError(k.at("model.losses_to_use") + " lists unsupervised losses, but " + k.name("data.video_dir") +
                          " is not set",
                      "set " + k.name("data.video_dir") + " to a folder of unlabelled videos of the same setup, or " +
                          k.name("model.losses_to_use") + " to [] for supervised training");
  }
  if (uses("pca_multiview") && d.mirrored_column_matches.size() < 2)
    throw UserError(k.at("model.losses_to_use") + " lists pca_multiview but " +
                        k.at("data.mirrored_column_matches") + " does not name two or more views",
                    "give, per view, the indices of the keypoints that match across views, e.g. "
                    "[[0, 1, 2], [8, 9, 10]]; or use pca_singleview");
  for (std::size_t v = 1; v < d.mirrored_column_matches.size(); ++v) {
    if (uses("pca_multiview") && d.mirrored_column_matches[v].size() != d.mirrored_column_matches[0].size())
      throw UserError(k.at("data.mirrored_column_matches") + ": view " + std::to_string(v) + " lists " +
                          std::to_string(d.mirrored_column_matches[v].size()) + " keypoints, view 0 lists " +
                          std::to_string(d.mirrored_column_matches[0].size()),
                      "every view lists the same keypoints, in the same order");
  }
  if (uses("temporal") && c.losses.temporal_epsilon.size() > 1 && d.num_keypoints > 0 &&
      static_cast<int>(c.losses.temporal_epsilon.size()) != d.num_keypoints)
    throw UserError(k.at("losses.temporal_epsilon") + " lists " + std::to_string(c.losses.temporal_epsilon.size()) +
                        " values for " + std::to_string(d.num_keypoints) + " keypoints",
                    "give one value for all keypoints, or one per keypoint");

  const DistributedConfig& x = c.distributed;
  if (x.accelerator == "cpu") {
    if (x.backend == "nccl") {
      throw UserError(k.is("distributed.backend", "nccl") + " needs GPUs, but " +
                          k.is("distributed.accelerator", "cpu"),
                      "use backend mpi or gloo on CPUs (or auto)");
    }
    if (t.num_gpus > 0) {
      throw UserError(k.is("training.num_gpus", std::to_string(t.num_gpus)) + " but " +
                          k.is("distributed.accelerator", "cpu"),
                      "set " + k.name("training.num_gpus") + " to 0 for a CPU run, or accelerator to gpu");
    }
  }
  // model.precision: every value is valid with every accelerator. On CPUs the
  // mixed ones emulate the GPU's 16-bit rounding in fp32 (same numerics, no
  // speed-up); make_run_backend (make_backend.cpp) warns about it once, on rank 0.
}

}  // namespace trainer::app::config_detail
