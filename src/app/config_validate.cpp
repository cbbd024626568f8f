// Combinations of configuration keys that are each valid alone but impossible
// together. Each error names every key involved and where its value came from.
#include <algorithm>  // std::find
#include <set>      // std::set
#include <sstream>  // std::ostringstream

#include "app/config_keys.hpp"    // validate_combinations, OriginOf
#include "app/config_values.hpp"  // format_real
#include "util/error.hpp"         // UserError

namespace trainer::app::config_detail {
namespace {

std::string from(const OriginOf& origin_of, const std::string& key) { return " (from " + origin_of(key) + ")"; }

}  // namespace

void validate_combinations(const Config& c, const OriginOf& origin_of) {
  const TrainingConfig& t = c.training;
  if (t.train_prob + t.val_prob > 1.0 + 1e-9) {
    throw UserError("training.train_prob = " + format_real(t.train_prob) + from(origin_of, "training.train_prob") +
                        " plus training.val_prob = " + format_real(t.val_prob) + from(origin_of, "training.val_prob") +
                        " is more than 1",
                    "the test set gets 1 - train_prob - val_prob of the frames; lower one of them, e.g. "
                    "train_prob = 0.8, val_prob = 0.1");
  }
  // min_epochs > max_epochs is fine, as in Lightning: max_epochs ends the run, and
  // lightning-pose's own configs pair min_epochs 300 with a lowered max_epochs.
  for (std::size_t i = 1; i < t.lr_scheduler_milestones.size(); ++i) {
    if (t.lr_scheduler_milestones[i] <= t.lr_scheduler_milestones[i - 1]) {
      throw UserError("training.lr_scheduler_milestones" + from(origin_of, "training.lr_scheduler_milestones") +
                          " must be strictly increasing, but " + std::to_string(t.lr_scheduler_milestones[i]) +
                          " follows " + std::to_string(t.lr_scheduler_milestones[i - 1]),
                      "list the epochs in increasing order, e.g. [150, 200, 250]");
    }
  }
  if (t.optimizer == "Adam" && t.weight_decay != 0.0) {
    throw UserError("training.weight_decay = " + format_real(t.weight_decay) +
                        from(origin_of, "training.weight_decay") + " has no effect with training.optimizer = Adam" +
                        from(origin_of, "training.optimizer"),
                    "set optimizer = AdamW to use weight decay, or weight_decay = 0");
  }

  const DataConfig& d = c.data;
  if (!d.csv_file.empty() && !d.data_files.empty()) {
    throw UserError("data.csv_file" + from(origin_of, "data.csv_file") + " and data.data_files" +
                        from(origin_of, "data.data_files") + " are both set",
                    "csv_file (with data_dir) imports a lightning-pose CSV project; data_files names HDF5 files "
                    "made by `trainer import`: give one of them");
  }
  if (d.num_keypoints > 0 && !d.keypoint_names.empty() &&
      static_cast<int>(d.keypoint_names.size()) != d.num_keypoints) {
    throw UserError("data.keypoint_names" + from(origin_of, "data.keypoint_names") + " lists " +
                        std::to_string(d.keypoint_names.size()) + " names but data.num_keypoints = " +
                        std::to_string(d.num_keypoints) + from(origin_of, "data.num_keypoints"),
                    "make them agree, or set num_keypoints = 0 to count the names");
  }
  std::set<std::string> seen;
  for (const auto& name : d.keypoint_names) {
    if (!seen.insert(name).second) {
      throw UserError("data.keypoint_names" + from(origin_of, "data.keypoint_names") + " lists '" + name +
                          "' twice",
                      "every keypoint needs its own name");
    }
  }

  // Unsupervised losses: videos to read, views for pca_multiview.
  const auto& losses = c.model.losses_to_use;
  const auto uses = [&](const char* name) { return std::find(losses.begin(), losses.end(), name) != losses.end(); };
  if (!losses.empty()) {
    if (d.video_dir.empty())
      throw UserError("model.losses_to_use" + from(origin_of, "model.losses_to_use") +
                          " lists unsupervised losses, but data.video_dir is not set",
                      "set data.video_dir to a folder of unlabelled videos of the same setup, or "
                      "losses_to_use = [] for supervised training");
  }
  if (uses("pca_multiview") && d.mirrored_column_matches.size() < 2)
    throw UserError("model.losses_to_use lists pca_multiview" + from(origin_of, "model.losses_to_use") +
                        " but data.mirrored_column_matches" + from(origin_of, "data.mirrored_column_matches") +
                        " does not name two or more views",
                    "give, per view, the indices of the keypoints that match across views, e.g. "
                    "[[0, 1, 2], [8, 9, 10]]; or use pca_singleview");
  for (std::size_t v = 1; v < d.mirrored_column_matches.size(); ++v) {
    if (uses("pca_multiview") && d.mirrored_column_matches[v].size() != d.mirrored_column_matches[0].size())
      throw UserError("data.mirrored_column_matches" + from(origin_of, "data.mirrored_column_matches") + ": view " +
                          std::to_string(v) + " lists " + std::to_string(d.mirrored_column_matches[v].size()) +
                          " keypoints, view 0 lists " + std::to_string(d.mirrored_column_matches[0].size()),
                      "every view lists the same keypoints, in the same order");
  }
  if (uses("temporal") && c.losses.temporal_epsilon.size() > 1 && d.num_keypoints > 0 &&
      static_cast<int>(c.losses.temporal_epsilon.size()) != d.num_keypoints)
    throw UserError("losses.temporal_epsilon" + from(origin_of, "losses.temporal_epsilon") + " lists " +
                        std::to_string(c.losses.temporal_epsilon.size()) + " values for " +
                        std::to_string(d.num_keypoints) + " keypoints",
                    "give one value for all keypoints, or one per keypoint");

  const DistributedConfig& x = c.distributed;
  if (x.accelerator == "cpu") {
    if (x.backend == "nccl") {
      throw UserError("distributed.backend = nccl" + from(origin_of, "distributed.backend") +
                          " needs GPUs, but distributed.accelerator = cpu" + from(origin_of, "distributed.accelerator"),
                      "use backend = mpi or gloo on CPUs (or auto)");
    }
    if (t.num_gpus > 0) {
      throw UserError("training.num_gpus = " + std::to_string(t.num_gpus) + from(origin_of, "training.num_gpus") +
                          " but distributed.accelerator = cpu" + from(origin_of, "distributed.accelerator"),
                      "set num_gpus = 0 for a CPU run, or accelerator = gpu");
    }
  }
  // model.precision: every value is valid with every accelerator. On CPUs the
  // mixed ones emulate the GPU's 16-bit rounding in fp32 (same numerics, no
  // speed-up); make_run_backend (make_backend.cpp) warns about it once, on rank 0.
}

}  // namespace trainer::app::config_detail
