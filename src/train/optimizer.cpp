// Adam / AdamW over flat buffers (see optimizer.hpp).
#include "train/optimizer.hpp"

#include "util/error.hpp"  // UserError

namespace trainer::train {

Optimizer::Optimizer(model::ParameterStore& store, const OptimizerConfig& config)
    : store_(&store), config_(config) {
  if (config.type != "Adam" && config.type != "AdamW")
    throw UserError("unknown optimizer '" + config.type + "'", "training.optimizer is Adam or AdamW");
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
  for (auto& g : groups_) {
    if (!g.active || g.count == 0) continue;
    ++g.step;
    compute::AdamParams p;
    p.lr = float(g.lr);
    p.weight_decay = config_.type == "AdamW" ? float(config_.weight_decay) : 0.f;
    p.decoupled_weight_decay = config_.type == "AdamW";
    p.step = g.step;
    store_->backend().adam_update(store_->params_data() + g.offset, store_->grads_data() + g.offset,
                                  m_.data() + g.offset, v_.data() + g.offset, g.count, p, stream);
  }
}

}  // namespace trainer::train
