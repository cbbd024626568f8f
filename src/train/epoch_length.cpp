// lightning-pose's steps per epoch (see epoch_length.hpp).
#include "train/epoch_length.hpp"

#include <algorithm>  // std::max, std::min

#include "util/error.hpp"  // TRAINER_ASSERT

namespace trainer::train {

namespace {
// calculate_steps_per_epoch's floor for semi-supervised epochs: with few labelled
// frames the model still sees this many batches of unlabelled video per epoch.
constexpr long kMinSemiSupervisedSteps = 10;
}  // namespace

long steps_per_epoch(const EpochLengthInputs& in) {
  TRAINER_ASSERT(in.batch_per_rank > 0, "batch_per_rank " << in.batch_per_rank);
  const long passes = (long(in.train_frames) + in.batch_per_rank - 1) / in.batch_per_rank;  // ceil(N / b)
  const long limit = in.limit_train_batches > 0 ? in.limit_train_batches
                     : in.semi_supervised       ? std::max(kMinSemiSupervisedSteps, passes)
                                                : passes;
  // The train loader's length: max_size_cycle runs as long as its longer loader.
  const long length = in.semi_supervised ? std::max(in.labeled_batches, in.unlabeled_batches) : in.labeled_batches;
  return std::min(limit, length);
}

long lp_unlabeled_batches(std::int64_t video_frames, int frames_per_rank, bool context) {
  TRAINER_ASSERT(frames_per_rank > 0, "frames_per_rank " << frames_per_rank);
  // Context batches take floor: lightning-pose prefers fewer batches to a short last one.
  if (context) return long(video_frames / frames_per_rank);
  return long((video_frames + frames_per_rank - 1) / frames_per_rank);
}

}  // namespace trainer::train
