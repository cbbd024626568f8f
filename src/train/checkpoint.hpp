#pragma once
// Checkpoints in HDF5 (layout in docs/MODEL.md, "Checkpoints"):
//   /model/<state_dict name>           float32 in PyTorch layout; num_batches_tracked int64 scalar
//   /optimizer/exp_avg/<name>           Adam first moments (parameters only)
//   /optimizer/exp_avg_sq/<name>        Adam second moments
//   /optimizer attributes               type, per group: <group>_step, <group>_lr, <group>_active
//   /state attributes                   epoch, global_step, best_val_loss, bad_checks,
//                                       world_size, seeds, model_type, backbone, keypoints, downsample factor,
//                                       loss_scale, loss_scale_growth_tracker (16-mixed),
//                                       the position of a mid-epoch stop and its loss sums
//   /state/config                       the effective INI text: a scalar fixed-length string
//                                       dataset (an attribute before; both are read)
// Written to a temporary file next to the target, flushed and closed, then renamed:
// a crash never leaves a half-written checkpoint under the final name.
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint64_t
#include <limits>   // std::numeric_limits
#include <map>      // std::map
#include <memory>   // std::unique_ptr, std::shared_ptr
#include <string>   // std::string
#include <vector>   // std::vector

#include "compute/host_buffer.hpp"    // compute::HostBuffer
#include "compute/stream.hpp"         // compute::Stream
#include "model/parameter_store.hpp"  // model::ParameterStore
#include "train/optimizer.hpp"        // Optimizer
#include "train/update_fence.hpp"     // UpdateFence

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
  // A checkpoint written in the middle of an epoch (a stop signal): the batches of
  // epoch `epochs_completed` already trained, and the loss sum and step count of
  // those batches over all ranks (for the epoch's mean in metrics.csv). 0 at an
  // epoch's end.
  long batches_into_epoch = 0;
  double epoch_loss_sum = 0;
  long epoch_steps = 0;
  // Semi-supervised: each unsupervised term's loss sum over those batches and all
  // ranks, by name (train/unsupervised_loss_names.hpp), for the epoch's means.
  std::map<std::string, double> epoch_unsupervised_sums;
  bool has_optimizer = true;  // false: a weights-only checkpoint (cannot be resumed)
};

// What a checkpoint holds, copied off the device: the host side of an asynchronous
// write. The copies are queued on the stream; `copied` completes when they are done,
// so the training stream never waits for them (docs/TRAINING.md, "Checkpoints").
// On the CPU a deferred snapshot leaves the large copies (parameters, Adam moments)
// in `deferred`, for another thread to make while the next step's forward and
// backward run; `deferred_done` is released then, and the optimizer's next update
// waits for it.
struct CheckpointSnapshot {
  struct Copy {
    float* dst = nullptr;
    const float* src = nullptr;
    std::size_t count = 0;
  };
  compute::HostBuffer<float> params, buffers, exp_avg, exp_avg_sq;  // pinned on CUDA
  std::vector<std::int64_t> counters;
  struct Group {
    long step = 0;
    double lr = 0;
    bool active = false;
  } groups[2];  // backbone, head
  std::string optimizer_type;
  double weight_decay = 0;
  TrainingState state;
  std::unique_ptr<compute::Event> copied;
  std::vector<Copy> deferred;
  std::shared_ptr<UpdateFence> deferred_done;
};

enum class SnapshotCopies {
  now,                  // every copy queued on the stream
  deferred_on_the_cpu,  // CPU backend: parameters and moments left in `deferred`
};

// Queues the copies into `snapshot` (its buffers grow to fit and are reused);
// optimizer may be null (a weights-only checkpoint). With deferred copies the
// caller makes the optimizer wait for `deferred_done` before its next update, and
// has complete_deferred_copies() run before the snapshot is written.
void take_snapshot(CheckpointSnapshot& snapshot, model::ParameterStore& store, Optimizer* optimizer,
                   const TrainingState& state, compute::Stream& stream,
                   SnapshotCopies copies = SnapshotCopies::now);
// Makes the deferred copies and releases `deferred_done` (nothing when none is left).
void complete_deferred_copies(CheckpointSnapshot& snapshot) noexcept;
// Waits for the snapshot's copies, then writes it atomically to `path`. `store` gives
// only the names and shapes, which never change, so another thread may train on.
void write_snapshot(const std::string& path, const CheckpointSnapshot& snapshot,
                    const model::ParameterStore& store);

// Both at once: writes everything atomically; optimizer may be null (e.g. an
// exported model).
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

// Writes the state as a checkpoint would, into memory only: a UserError when a
// checkpoint of this run could not be written (checked before the first step, so a
// run does not train for hours and then fail at every checkpoint).
void check_state_writable(const TrainingState& state);

// Loads every parameter, buffer and counter of the store from /model; a missing
// name or a shape mismatch is a UserError naming it.
void load_model(const std::string& path, model::ParameterStore& store, compute::Stream& stream);

// Loads the backbone only (--init-weights): every backbone.* tensor of the model,
// which the file must hold with the same shape; returns how many were loaded. A
// backbone tensor of the file that the model lacks (but backbone.fc.*, a classifier),
// one the file lacks, or none at all is a UserError, checked before anything loads.
// Every reader here turns a failed HDF5 call into a UserError naming the file as
// damaged (exit 2), and refuses a path that is not a regular file before opening it.
int load_backbone_weights(const std::string& path, model::ParameterStore& store, compute::Stream& stream);

// Loads Adam moments and group steps.
void load_optimizer(const std::string& path, Optimizer& optimizer, compute::Stream& stream);

}  // namespace trainer::train
