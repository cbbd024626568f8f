#pragma once
// How many training steps an epoch has: lightning-pose's rule (f54c477). Its train.py
// computes calculate_steps_per_epoch, ceil(N / b) with N the train split's frames and
// b the per-GPU batch (data/factory.py: ceil(train_batch_size / num_gpus)), raised to
// at least 10 for a semi-supervised data module, and hands it to Lightning as
// limit_train_batches. Lightning then stops an epoch after
//   min(limit_train_batches, length of the train loader)
// batches. Supervised, that length is one pass of the rank's labelled rows, never
// more than the limit: the rule changes nothing. Semi-supervised, the loader is a
// CombinedLoader(mode="max_size_cycle") of the labelled loader and the DALI video
// loader: its length is the longer of the two, and the shorter restarts when it runs
// out. So the labelled frames cycle (a new pass, reshuffled) until the epoch has its
// steps; every rank computes the same count from the same numbers.
//
// An epoch is this many steps for everything epoch-based: the LR schedule, backbone
// unfreezing, the unsupervised warm-up, validation and checkpoint cadence.
#include <cstdint>  // std::int64_t

#include "train/batch_limit.hpp"  // BatchLimit

namespace trainer::train {

struct EpochLengthInputs {
  std::int64_t train_frames = 0;  // N: frames of the train split, all ranks together
  int batch_per_rank = 1;         // b: the plan's per-rank train batch, ceil(B / G)
  long labeled_batches = 0;       // batches in one pass of this rank's sampler rows
  bool semi_supervised = false;   // model.losses_to_use is not empty
  long unlabeled_batches = 0;     // lightning-pose's video loader length (lp_unlabeled_batches)
  // training.limit_train_batches (lightning-pose passes `limit_train_batches or
  // steps_per_epoch`: unset, 0 and 0.0 take calculate_steps_per_epoch); a count caps
  // the epoch, a fraction takes that share of the train loader's length (at least 1).
  BatchLimit limit_train_batches;
};

// Batches per epoch on every rank (optimizer steps with accumulate_grad_batches 1).
// A fraction of limit_train_batches that leaves no batch is a UserError, as in Lightning.
long steps_per_epoch(const EpochLengthInputs& in);

// lightning-pose's DALI train loader length (num_iters in data/video/dali.py) for
// `video_frames` frames over all videos and `frames_per_rank` frames per step:
// ceil(T / F) for single frames, floor(T / F) for context batches (heatmap_mhcrnn).
long lp_unlabeled_batches(std::int64_t video_frames, int frames_per_rank, bool context);

}  // namespace trainer::train
