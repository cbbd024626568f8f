// Learning-rate schedule (see lr_schedule.hpp).
#include "train/lr_schedule.hpp"

#include <cmath>  // std::pow

namespace trainer::train {

namespace {
double head_lr(const LrScheduleConfig& c, int epoch) {
  int passed = 0;
  for (int m : c.milestones)
    if (m <= epoch) ++passed;
  return c.base_lr * std::pow(c.gamma, passed);
}
}  // namespace

EpochLr lr_for_epoch(const LrScheduleConfig& c, int epoch) {
  EpochLr out;
  out.head = head_lr(c, epoch);
  if (epoch < c.unfreezing_epoch) return out;
  // Replay UnfreezeBackbone from the unfreezing epoch on: 0.1 x the head's lr then,
  // x1.5 an epoch, until it reaches the head's lr, which it follows from then on.
  double backbone = c.backbone_initial_ratio * head_lr(c, c.unfreezing_epoch);
  for (int e = c.unfreezing_epoch + 1; e <= epoch; ++e) {
    const double next = c.backbone_growth * backbone;
    const double current = head_lr(c, e);
    backbone = next > current ? current : next;
  }
  out.backbone = backbone;
  return out;
}

}  // namespace trainer::train
