// Semi-supervised set-up of `trainer train` (see semi_supervised.hpp).
#include "app/semi_supervised.hpp"

#include <algorithm>  // std::max

#include "app/loader_source.hpp"   // batch_allocator
#include "data/video_reader.hpp"   // data::list_videos

namespace trainer::app {

SemiSupervised make_semi_supervised(const Config& config, const runtime::RunPlan& plan, const runtime::World& world,
                                    const data::Dataset& dataset, const data::Split& split,
                                    compute::Backend& backend, compute::Stream& stream, const Log& log) {
  SemiSupervised semi;
  if (config.model.losses_to_use.empty()) return semi;
  // The PCA losses fit on the labelled training frames, in the pixels of the stored
  // frames (the unlabelled keypoints are measured in the video's pixels: the same
  // camera, so the same frame size, is assumed, as lightning-pose does).
  const int k = dataset.num_keypoints();
  std::vector<float> labeled;
  labeled.reserve(split.train.size() * static_cast<std::size_t>(k) * 2);
  for (const std::int64_t i : split.train) {
    const float* kp = dataset.keypoints(i);
    labeled.insert(labeled.end(), kp, kp + 2 * k);
  }
  std::vector<std::string> notes;
  semi.losses = std::make_unique<train::UnsupervisedLosses>(backend, stream, config.model.losses_to_use,
                                                            config.losses, config.data, k, labeled, &notes);
  for (const auto& note : notes) log.info(note);

  data::UnlabeledOptions options;
  options.videos = data::list_videos(config.data.video_dir);
  options.frames_per_rank = plan.rank.unlabeled_frames;
  options.rank = world.rank;
  options.world_size = world.size;
  options.height = config.data.image_resize_height;
  options.width = config.data.image_resize_width;
  options.num_keypoints = k;
  options.seed = config.training.rng_seed_data_pt;
  options.num_workers = std::max(1, plan.rank.num_workers);
  options.allocator = batch_allocator(backend);
  semi.frames = std::make_unique<data::UnlabeledFrames>(options);
  semi.source = std::make_unique<UnlabeledFramesSource>(*semi.frames);
  log.info("unsupervised losses: " + [&] {
    std::string names;
    for (const auto& t : semi.losses->terms()) names += (names.empty() ? "" : ", ") + t.name;
    return names;
  }() + " on " + std::to_string(options.videos.size()) + " video(s) of " + config.data.video_dir + ": " +
           std::to_string(semi.frames->sequence_frames()) + " consecutive frames per step (" +
           std::to_string(options.frames_per_rank) + " per rank), " + std::to_string(semi.frames->windows()) +
           " sequences");
  return semi;
}

}  // namespace trainer::app
