#pragma once
// Adam / AdamW over the flat parameter buffer, one call per parameter group
// (backbone, head). State (first/second moments) lives in flat buffers parallel
// to the parameters; each group counts its own steps, because PyTorch keeps the
// step per parameter and the backbone joins the optimizer only when unfrozen.
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

struct OptimizerConfig {
  std::string type = "Adam";  // one of optimizer_names()
  double weight_decay = 0.0;  // AdamW only (torch's AdamW default 1e-2 is not used)
};

class Optimizer {
 public:
  Optimizer(model::ParameterStore& store, const OptimizerConfig& config);

  struct Group {
    model::ParamGroup id;
    std::size_t offset = 0, count = 0;
    double lr = 0;
    bool active = false;  // in the optimizer (backbone: from the unfreezing epoch)
    long step = 0;        // optimizer steps taken by this group
  };

  // Sets a group's lr and whether it trains (first activation starts its state).
  void set_group(model::ParamGroup id, double lr, bool active);
  // One Adam step for every active group with the current gradients. Waits first
  // for a fence given to wait_before_update (a snapshot still being copied).
  void step(compute::Stream& stream) {
    prepare_step(stream);
    apply_step(stream);
  }
  // step() in two halves, so that a recorded step (CUDA graph) can hold the device
  // half while the host half runs before every replay. prepare_step: the fence wait,
  // each active group's step count, and its lr and bias corrections written to device
  // memory (one set_values on `stream`). apply_step: the update of every active group,
  // reading those values when it runs.
  void prepare_step(compute::Stream& stream);
  void apply_step(compute::Stream& stream);
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
  model::ParameterStore* store_;
  OptimizerConfig config_;
  OptimizerType type_;
  Group groups_[2];
  compute::DeviceBuffer m_, v_;
  compute::DeviceBuffer factors_;  // per group, compute::AdamFactors::kCount floats
  std::shared_ptr<const UpdateFence> fence_;
};

}  // namespace trainer::train
