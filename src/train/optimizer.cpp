// Adam / AdamW over flat buffers (see optimizer.hpp).
#include "train/optimizer.hpp"

#include "util/error.hpp"      // UserError
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
}

void Optimizer::set_group(model::ParamGroup id, double lr, bool active) {
  auto& g = group(id);
  g.lr = lr;
  g.active = active;
}

void Optimizer::step(compute::Stream& stream) {
  if (fence_) {
    fence_->wait();
    fence_.reset();
  }
  for (auto& g : groups_) {
    if (!g.active || g.count == 0) continue;
    ++g.step;
    compute::AdamParams p;
    p.lr = float(g.lr);
    const bool adamw = type_ == OptimizerType::adamw;
    p.weight_decay = adamw ? float(config_.weight_decay) : 0.f;
    p.decoupled_weight_decay = adamw;
    p.step = g.step;
    store_->backend().adam_update(store_->params_data() + g.offset, store_->grads_data() + g.offset,
                                  m_.data() + g.offset, v_.data() + g.offset, g.count, p, stream);
  }
}

}  // namespace trainer::train
