#pragma once
// Checkpoints in HDF5 (layout in docs/MODEL.md, "Checkpoints"):
//   /model/<state_dict name>           float32 in PyTorch layout; num_batches_tracked int64 scalar
//   /optimizer/exp_avg/<name>           Adam first moments (parameters only)
//   /optimizer/exp_avg_sq/<name>        Adam second moments
//   /optimizer attributes               type, per group: <group>_step, <group>_lr, <group>_active
//   /state attributes                   epoch, global_step, best_val_loss, bad_checks,
//                                       world_size, seeds, config (the effective INI text),
//                                       model_type, backbone, keypoints, downsample factor,
//                                       loss_scale, loss_scale_growth_tracker (16-mixed)
// Written to a temporary file next to the target, flushed and closed, then renamed:
// a crash never leaves a half-written checkpoint under the final name.
#include <cstdint>  // std::uint64_t
#include <limits>   // std::numeric_limits
#include <string>   // std::string
#include <vector>   // std::vector

#include "compute/stream.hpp"         // compute::Stream
#include "model/parameter_store.hpp"  // model::ParameterStore
#include "train/optimizer.hpp"        // Optimizer

namespace trainer::train {

// Where training stands; saved with every checkpoint, restored by --resume.
struct TrainingState {
  int epochs_completed = 0;   // the next epoch to run (0-based)
  long global_step = 0;       // optimizer steps so far
  double best_val_loss = std::numeric_limits<double>::infinity();
  int bad_checks = 0;         // validation checks without improvement (early stopping)
  int world_size = 1;
  std::uint64_t rng_seed_data = 0, rng_seed_model = 0;
  std::string config_text;    // effective configuration (INI)
  std::string model_type;     // heatmap | heatmap_mhcrnn (empty in older checkpoints)
  std::string backbone;       // model description, checked on load
  int num_keypoints = 0;
  int downsample_factor = 0;
  // The 16-mixed loss scaler (train/loss_scaler.hpp); unused by other precisions.
  float loss_scale = 65536.f;
  int loss_scale_growth_tracker = 0;
};

// Writes everything atomically; optimizer may be null (e.g. an exported model).
void save_checkpoint(const std::string& path, model::ParameterStore& store, Optimizer* optimizer,
                     const TrainingState& state, compute::Stream& stream);

// A loose float tensor for exchange files (e.g. inputs exported for parity tests).
struct NamedTensor {
  std::string name;
  std::vector<int> shape;
  std::vector<float> values;
};
// Writes the tensors as float32 datasets at the root of a new HDF5 file (atomically).
void save_named_tensors(const std::string& path, const std::vector<NamedTensor>& tensors);

// Reads /state (throws UserError when the file is not a trainer checkpoint).
TrainingState load_training_state(const std::string& path);

// Loads every parameter, buffer and counter of the store from /model; a missing
// name or a shape mismatch is a UserError naming it.
void load_model(const std::string& path, model::ParameterStore& store, compute::Stream& stream);

// Loads the backbone only (--init-weights): every backbone.* tensor present in the
// file whose shape matches; returns how many were loaded. Names the file has that
// the model lacks (e.g. backbone.fc.*) are ignored; none at all is a UserError.
int load_backbone_weights(const std::string& path, model::ParameterStore& store, compute::Stream& stream);

// Loads Adam moments and group steps.
void load_optimizer(const std::string& path, Optimizer& optimizer, compute::Stream& stream);

}  // namespace trainer::train
