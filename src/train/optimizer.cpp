// Adam / AdamW over flat buffers (see optimizer.hpp).
#include "train/optimizer.hpp"

#include "compute/adam_factors.hpp"  // AdamFactors, adam_factors
#include "util/error.hpp"            // UserError
#include "util/name_list.hpp"  // join_names

namespace trainer::train {

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names = {"Adam", "AdamW"};
  return names;
}

OptimizerType parse_optimizer(const std::string& name) {
  if (name == "Adam") return OptimizerType::adam;
  if (name == "AdamW") return OptimizerType::adamw;
  throw UserError("unknown optimizer '" + name + "'", "training.optimizer is one of " + join_names(optimizer_names()));
}

double default_weight_decay(OptimizerType type) { return type == OptimizerType::adamw ? 1e-2 : 0.0; }

Optimizer::Optimizer(model::ParameterStore& store, const OptimizerConfig& config)
    : store_(&store), config_(config), type_(parse_optimizer(config.type)) {
  const model::ParamGroup ids[2] = {model::ParamGroup::backbone, model::ParamGroup::head};
  for (int i = 0; i < 2; ++i) {
    const auto r = store.group_range(ids[i]);
    groups_[i].id = ids[i];
    groups_[i].offset = r.offset;
    groups_[i].count = r.count;
    groups_[i].trained = store.trained_ranges(ids[i]);
  }
  m_ = compute::DeviceBuffer(store.backend(), store.parameter_count());
  v_ = compute::DeviceBuffer(store.backend(), store.parameter_count());
  factors_ = compute::DeviceBuffer(store.backend(), 2 * compute::AdamFactors::kCount);
  counts_on_device_ = store.backend().precision() == compute::Precision::fp16;
  if (counts_on_device_) device_steps_ = compute::DeviceBuffer(store.backend(), 4);
}

int Optimizer::index(model::ParamGroup id) { return id == model::ParamGroup::backbone ? 0 : 1; }

long Optimizer::steps(model::ParamGroup id, compute::Stream& stream) {
  if (counts_on_device_ && device_steps_set_) {
    float counts[2];
    store_->backend().download(counts, device_steps_.data() + 2, 2, stream);
    stream.synchronize();
    steps_[0] = long(counts[0]), steps_[1] = long(counts[1]);
  }
  return steps_[index(id)];
}

void Optimizer::set_steps(model::ParamGroup id, long steps, compute::Stream& stream) {
  steps_[index(id)] = steps;
  if (!counts_on_device_ || !device_steps_set_) return;
  const float count = float(steps);
  store_->backend().set_values(device_steps_.data() + 2 + index(id), &count, 1, stream);
}

void Optimizer::set_group(model::ParamGroup id, double lr, bool active) {
  auto& g = group(id);
  g.lr = lr;
  g.active = active;
}

unsigned Optimizer::updated_groups() const {
  unsigned bits = 0;
  for (int i = 0; i < 2; ++i)
    if (groups_[i].active && groups_[i].count > 0) bits |= 1u << i;
  return bits;
}

void Optimizer::prepare_step(compute::Stream& stream) {
  if (fence_) {
    fence_->wait();
    fence_.reset();
  }
  if (counts_on_device_) {
    float values[4] = {float(groups_[0].lr), float(groups_[1].lr), float(steps_[0]), float(steps_[1])};
    store_->backend().set_values(device_steps_.data(), values, device_steps_set_ ? 2 : 4, stream);
    device_steps_set_ = true;
    return;
  }
  constexpr int kCount = compute::AdamFactors::kCount;
  float values[2 * kCount] = {};
  const bool adamw = type_ == OptimizerType::adamw;
  const compute::AdamParams defaults;
  for (int i = 0; i < 2; ++i) {
    Group& g = groups_[i];
    if (!g.active || g.count == 0) continue;
    const compute::AdamFactors f =
        compute::adam_factors(float(g.lr), defaults.beta1, defaults.beta2,
                              adamw ? float(config_.weight_decay) : 0.f, adamw, ++steps_[i]);
    values[i * kCount] = f.step_size, values[i * kCount + 1] = f.inv_sqrt_bc2, values[i * kCount + 2] = f.decay;
  }
  if (updated_groups() != 0) store_->backend().set_values(factors_.data(), values, 2 * kCount, stream);
}

void Optimizer::apply_step(compute::Stream& stream, const float* skip) {
  const bool adamw = type_ == OptimizerType::adamw;
  for (int i = 0; i < 2; ++i) {
    const Group& g = groups_[i];
    if (!g.active || g.count == 0) continue;
    compute::AdamParams p;
    p.weight_decay = adamw ? float(config_.weight_decay) : 0.f;
    p.decoupled_weight_decay = adamw;
    p.device_factors = factors_.data() + i * compute::AdamFactors::kCount;
    p.skip = skip;
    if (counts_on_device_)
      store_->backend().count_adam_step(device_steps_.data() + 2 + i, factors_.data() + i * compute::AdamFactors::kCount,
                                        device_steps_.data() + i, p, stream);
    for (const auto& r : g.trained)
      store_->backend().adam_update(store_->params_data() + r.offset, store_->grads_data() + r.offset,
                                    m_.data() + r.offset, v_.data() + r.offset, r.count, p, stream);
  }
}

}  // namespace trainer::train
