#pragma once
// Learning rates per epoch, as lightning-pose configures Lightning:
// - head: MultiStepLR, lr = base * gamma^(number of milestones <= epoch)
//   (the scheduler steps at the end of each epoch);
// - backbone: lightning-pose's UnfreezeBackbone (since lightning-pose 1.6, in place
//   of Lightning's BackboneFinetuning): the backbone is in the optimizer from the
//   first step with lr 0 before epoch U, so its gradients are computed and Adam's
//   moments and step count accumulate while its weights stay put; at U its lr is
//   0.1 x the head's; each later epoch 1.5 x its previous value, capped at the
//   head's lr.
// A pure function of the epoch, so a resumed run needs no saved schedule state.
#include <vector>  // std::vector

namespace trainer::train {

struct LrScheduleConfig {
  double base_lr = 1e-3;
  std::vector<int> milestones;
  double gamma = 0.5;
  int unfreezing_epoch = 20;
  double backbone_initial_ratio = 0.1;
  double backbone_growth = 1.5;
};

struct EpochLr {
  double head = 0;
  double backbone = 0;  // 0 while frozen (still stepped: the moments accumulate)
};

EpochLr lr_for_epoch(const LrScheduleConfig& config, int epoch);

}  // namespace trainer::train
