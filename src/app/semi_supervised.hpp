#pragma once
// What a semi-supervised run adds to `trainer train` (model.losses_to_use not
// empty): the unlabelled video frames of data.video_dir, decoded per rank, and the
// unsupervised losses with their PCA fits on the labelled training keypoints.
#include <memory>  // std::unique_ptr

#include "app/loader_source.hpp"         // LoaderSource
#include "compute/backend.hpp"            // compute::Backend, Stream
#include "config/config.hpp"              // Config
#include "data/dataset.hpp"               // data::Dataset
#include "data/split.hpp"                 // data::Split
#include "data/unlabeled_frames.hpp"      // data::UnlabeledFrames
#include "runtime/run_plan.hpp"           // runtime::RunPlan
#include "runtime/world.hpp"              // runtime::World
#include "train/batch_source.hpp"         // train::UnlabeledSource
#include "train/unsupervised_losses.hpp"  // train::UnsupervisedLosses
#include "util/log.hpp"                   // Log

namespace trainer::app {

class UnlabeledFramesSource final : public train::UnlabeledSource {
 public:
  explicit UnlabeledFramesSource(data::UnlabeledFrames& frames) : frames_(frames) {}
  void start_epoch(int epoch, long first_step) override { frames_.start_epoch(epoch, first_step); }
  const data::Batch& next() override { return frames_.next(); }

 private:
  data::UnlabeledFrames& frames_;
};

struct SemiSupervised {
  std::unique_ptr<data::UnlabeledFrames> frames;
  std::unique_ptr<UnlabeledFramesSource> source;
  std::unique_ptr<train::UnsupervisedLosses> losses;
  bool active() const { return losses != nullptr; }
};

// Empty when model.losses_to_use is. UserError for a video that cannot be read or
// is shorter than a sequence, and for PCA settings the labels cannot satisfy.
SemiSupervised make_semi_supervised(const Config& config, const runtime::RunPlan& plan, const runtime::World& world,
                                    const data::Dataset& dataset, const data::Split& split,
                                    compute::Backend& backend, compute::Stream& stream, const Log& log);

// lightning-pose's steps per epoch for this run (train/epoch_length.hpp): one pass of
// the labelled rows; semi-supervised, at least 10 steps, the labelled frames cycling.
// training.limit_train_batches replaces that count when set. The same on every rank
// (it reads only numbers every rank shares).
long steps_per_epoch(const Config& config, const runtime::RunPlan& plan, const data::Split& split,
                     const LoaderSource& train, const SemiSupervised& semi);

}  // namespace trainer::app
