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

Optimizer::Optimizer(model::ParameterStore& store, const OptimizerConfig& config)
    : store_(&store), config_(config), type_(parse_optimizer(config.type)) {
  const model::ParamGroup ids[2] = {model::ParamGroup::backbone, model::ParamGroup::head};
  for (int i = 0; i < 2; ++i) {
    const auto r = store.group_range(ids[i]);
    groups_[i].id = ids[i];
    groups_[i].offset = r.offset;
    groups_[i].count = r.count;
  }
  m_ = compute::DeviceBuffer(store.backend(), store.parameter_count());
  v_ = compute::DeviceBuffer(store.backend(), store.parameter_count());
  factors_ = compute::DeviceBuffer(store.backend(), 2 * compute::AdamFactors::kCount);
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
  constexpr int kCount = compute::AdamFactors::kCount;
  float values[2 * kCount] = {};
  const bool adamw = type_ == OptimizerType::adamw;
  const compute::AdamParams defaults;
  for (int i = 0; i < 2; ++i) {
    Group& g = groups_[i];
    if (!g.active || g.count == 0) continue;
    ++g.step;
    const compute::AdamFactors f =
        compute::adam_factors(float(g.lr), defaults.beta1, defaults.beta2,
                              adamw ? float(config_.weight_decay) : 0.f, adamw, g.step);
    values[i * kCount] = f.step_size, values[i * kCount + 1] = f.inv_sqrt_bc2, values[i * kCount + 2] = f.decay;
  }
  if (updated_groups() != 0) store_->backend().set_values(factors_.data(), values, 2 * kCount, stream);
}

void Optimizer::apply_step(compute::Stream& stream) {
  const bool adamw = type_ == OptimizerType::adamw;
  for (int i = 0; i < 2; ++i) {
    const Group& g = groups_[i];
    if (!g.active || g.count == 0) continue;
    compute::AdamParams p;
    p.weight_decay = adamw ? float(config_.weight_decay) : 0.f;
    p.decoupled_weight_decay = adamw;
    p.device_factors = factors_.data() + i * compute::AdamFactors::kCount;
    store_->backend().adam_update(store_->params_data() + g.offset, store_->grads_data() + g.offset,
                                  m_.data() + g.offset, v_.data() + g.offset, g.count, p, stream);
  }
}

}  // namespace trainer::train
