#pragma once
// Adam / AdamW over the flat parameter buffer, one call per parameter group
// (backbone, head). State (first/second moments) lives in flat buffers parallel
// to the parameters; each group counts its own steps, because PyTorch keeps the
// step per parameter (training keeps the backbone active from the first step, at lr
// 0 while frozen, as lightning-pose's UnfreezeBackbone; an inactive group is neither
// stepped nor counted).
//
// In 16-mixed the loss scaler decides on the device whether a step runs (a skipped
// step does not count, as torch calls no optimizer.step() for it), so there the
// step counts live in device memory and the kernel of count_adam_step turns each
// into its bias corrections; steps() reads them back (and waits). Elsewhere the host
// counts them and writes each step's factors, as before.
#include <cstddef>  // std::size_t
#include <memory>   // std::shared_ptr
#include <string>   // std::string
#include <vector>   // std::vector

#include "compute/backend.hpp"        // compute::Backend, DeviceBuffer, AdamParams
#include "model/parameter_store.hpp"  // model::ParameterStore, ParamGroup
#include "train/update_fence.hpp"     // UpdateFence

namespace trainer::train {

enum class OptimizerType { adam, adamw };

// The names of training.optimizer: "Adam" and "AdamW".
const std::vector<std::string>& optimizer_names();
// One of optimizer_names(); anything else is a UserError listing them.
OptimizerType parse_optimizer(const std::string& name);

// torch's default weight decay for the optimizer: 0 for Adam, 1e-2 for AdamW.
// lightning-pose builds its optimizer from the learning rate alone, so its AdamW
// runs decay at 1e-2.
double default_weight_decay(OptimizerType type);

struct OptimizerConfig {
  std::string type = "Adam";  // one of optimizer_names()
  double weight_decay = 0.0;  // AdamW only
};

class Optimizer {
 public:
  Optimizer(model::ParameterStore& store, const OptimizerConfig& config);

  struct Group {
    model::ParamGroup id;
    std::size_t offset = 0, count = 0;
    // What the update runs over: [offset, offset + count) less the unused tensors,
    // which keep their values and zero moments as PyTorch's grad-None tensors do.
    std::vector<model::ParameterStore::Range> trained;
    double lr = 0;
    bool active = false;  // in the optimizer (training: both groups from the first step)
  };

  // Sets a group's lr and whether it trains (first activation starts its state).
  void set_group(model::ParamGroup id, double lr, bool active);
  // One Adam step for every active group with the current gradients. Waits first
  // for a fence given to wait_before_update (a snapshot still being copied).
  // `skip` (device memory, LossScaler::skip_flag; null: never): nonzero when the
  // update runs means no update and, in 16-mixed, no step counted.
  void step(compute::Stream& stream, const float* skip = nullptr) {
    prepare_step(stream);
    apply_step(stream, skip);
  }
  // step() in two halves, so that a recorded step (CUDA graph) can hold the device
  // half while the host half runs before every replay. prepare_step: the fence wait,
  // each active group's step count, and its lr and bias corrections written to device
  // memory (one set_values on `stream`; in 16-mixed only the lr). apply_step: the update
  // of every active group, reading those values when it runs (16-mixed: counting the
  // step on the device first).
  void prepare_step(compute::Stream& stream);
  void apply_step(compute::Stream& stream, const float* skip = nullptr);
  // Optimizer steps a group has taken (16-mixed: read from the device after the work
  // queued on `stream`, which it waits for).
  long steps(model::ParamGroup id, compute::Stream& stream);
  // Sets them (a resumed run; 16-mixed: enqueued on `stream`).
  void set_steps(model::ParamGroup id, long steps, compute::Stream& stream);
  // Which groups apply_step updates (bit 0 backbone, bit 1 head): part of what a
  // recorded step depends on.
  unsigned updated_groups() const;
  // The next step's update waits for `fence` (replaces an earlier one, which the
  // caller has waited for or let go).
  void wait_before_update(std::shared_ptr<const UpdateFence> fence) { fence_ = std::move(fence); }

  Group& group(model::ParamGroup id) { return id == model::ParamGroup::backbone ? groups_[0] : groups_[1]; }
  const Group& group(model::ParamGroup id) const {
    return id == model::ParamGroup::backbone ? groups_[0] : groups_[1];
  }
  float* exp_avg() { return m_.data(); }
  float* exp_avg_sq() { return v_.data(); }
  std::size_t size() const { return m_.size(); }
  const OptimizerConfig& config() const { return config_; }
  model::ParameterStore& store() { return *store_; }

 private:
  static int index(model::ParamGroup id);  // into groups_ and steps_

  model::ParameterStore* store_;
  OptimizerConfig config_;
  OptimizerType type_;
  Group groups_[2];
  long steps_[2] = {0, 0};  // per group; in 16-mixed only until device_steps_ holds them
  compute::DeviceBuffer m_, v_;
  compute::DeviceBuffer factors_;  // per group, compute::AdamFactors::kCount floats
  // 16-mixed: the two groups' lr (host-written each step) then their step counts
  // (device-owned once device_steps_set_).
  bool counts_on_device_ = false, device_steps_set_ = false;
  compute::DeviceBuffer device_steps_;
  std::shared_ptr<const UpdateFence> fence_;
};

}  // namespace trainer::train
