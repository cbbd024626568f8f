// lightning-pose's steps per epoch (see epoch_length.hpp).
#include "train/epoch_length.hpp"

#include <algorithm>  // std::max, std::min

#include "util/error.hpp"  // TRAINER_ASSERT, UserError

namespace trainer::train {

namespace {
// calculate_steps_per_epoch's floor for semi-supervised epochs: with few labelled
// frames the model still sees this many batches of unlabelled video per epoch.
constexpr long kMinSemiSupervisedSteps = 10;
}  // namespace

long steps_per_epoch(const EpochLengthInputs& in) {
  TRAINER_ASSERT(in.batch_per_rank > 0, "batch_per_rank " << in.batch_per_rank);
  const long passes = (long(in.train_frames) + in.batch_per_rank - 1) / in.batch_per_rank;  // ceil(N / b)
  // The train loader's length: max_size_cycle runs as long as its longer loader.
  const long length = in.semi_supervised ? std::max(in.labeled_batches, in.unlabeled_batches) : in.labeled_batches;
  const BatchLimit& given = in.limit_train_batches;
  if (!given.is_set() || given.value == 0) {  // lightning-pose's `or steps_per_epoch`
    const long limit = in.semi_supervised ? std::max(kMinSemiSupervisedSteps, passes) : passes;
    return std::min(limit, length);
  }
  if (given.kind == BatchLimit::Kind::count) return std::min(long(given.value), length);
  // Lightning's fraction: int(length * fraction), and an error when that is 0.
  const long batches = long(double(length) * given.value);
  if (batches < 1)
    throw UserError("training.limit_train_batches = " + format_batch_limit(given) + " leaves no batch: the train "
                        "loader has " + std::to_string(length) + " batches per rank",
                    "raise training.limit_train_batches to at least " +
                        std::to_string(length > 0 ? 1.0 / double(length) : 1.0) + ", or give a count of batches");
  return batches;
}

long lp_unlabeled_batches(std::int64_t video_frames, int frames_per_rank, bool context) {
  TRAINER_ASSERT(frames_per_rank > 0, "frames_per_rank " << frames_per_rank);
  // Context batches take floor: lightning-pose prefers fewer batches to a short last one.
  if (context) return long(video_frames / frames_per_rank);
  return long((video_frames + frames_per_rank - 1) / frames_per_rank);
}

}  // namespace trainer::train
