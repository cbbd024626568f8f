// Semi-supervised set-up of `trainer train` (see semi_supervised.hpp).
#include "app/semi_supervised.hpp"

#include <algorithm>  // std::max
#include <numeric>    // std::accumulate

#include "app/loader_source.hpp"   // batch_allocator
#include "app/run_options.hpp"     // resolve_video_dir
#include "data/augment.hpp"        // data::parse_imgaug
#include "data/unlabeled_augment.hpp"  // data::augments_unlabeled_frames
#include "data/video_reader.hpp"   // data::list_videos, VideoReader
#include "train/batch_limit.hpp"   // train::parse_batch_limit
#include "train/epoch_length.hpp"  // train::steps_per_epoch, lp_unlabeled_batches
#include "util/error.hpp"          // UserError

namespace trainer::app {

SemiSupervised make_semi_supervised(const Config& config, const runtime::RunPlan& plan, const runtime::World& world,
                                    const data::Dataset& dataset, const data::Split& split,
                                    compute::Backend& backend, compute::Stream& stream, const Log& log) {
  SemiSupervised semi;
  if (config.model.losses_to_use.empty()) return semi;
  const std::string video_dir = resolve_video_dir(config.data);
  const std::vector<std::string> videos = data::list_videos(video_dir);
  // The unsupervised keypoints are measured in the videos' pixels and the PCA is fitted
  // on the labels: one frame size for every video, and the labels scaled to it when
  // the stored frames were resized on import (`trainer import --resize`).
  int video_w = 0, video_h = 0;
  for (const auto& path : videos) {
    const data::VideoReader probe(path);
    if (video_w == 0) video_w = probe.info().width, video_h = probe.info().height;
    if (probe.info().width != video_w || probe.info().height != video_h)
      throw UserError("the unlabelled videos have different frame sizes: " + videos.front() + " is " +
                          std::to_string(video_w) + "x" + std::to_string(video_h) + ", " + path + " is " +
                          std::to_string(probe.info().width) + "x" + std::to_string(probe.info().height),
                      "the unsupervised losses measure keypoints in the videos' pixels; give data.video_dir "
                      "videos of one camera view and size");
  }
  const double to_video_x = double(video_w) / dataset.width(), to_video_y = double(video_h) / dataset.height();
  if (to_video_x != 1.0 || to_video_y != 1.0)
    log.info("unsupervised losses: the labels (frames of " + std::to_string(dataset.width()) + "x" +
             std::to_string(dataset.height()) + ") are scaled to the videos' " + std::to_string(video_w) + "x" +
             std::to_string(video_h) + " pixels for the PCA");
  const int k = dataset.num_keypoints();
  std::vector<float> labeled;
  labeled.reserve(split.train.size() * static_cast<std::size_t>(k) * 2);
  for (const std::int64_t i : split.train) {
    const float* kp = dataset.keypoints(i);
    for (int j = 0; j < k; ++j) {
      labeled.push_back(static_cast<float>(kp[2 * j] * to_video_x));
      labeled.push_back(static_cast<float>(kp[2 * j + 1] * to_video_y));
    }
  }
  std::vector<std::string> notes;
  semi.losses = std::make_unique<train::UnsupervisedLosses>(backend, stream, config.model.losses_to_use,
                                                            config.losses, config.data, k, labeled, &notes);
  for (const auto& note : notes) log.info(note);

  data::UnlabeledOptions options;
  options.videos = videos;
  options.frames_per_rank = plan.rank.unlabeled_frames;
  options.context = plan.rank.context_batch_size > 0;  // heatmap_mhcrnn: context batches
  options.rank = world.rank;
  options.world_size = world.size;
  options.height = config.data.image_resize_height;
  options.width = config.data.image_resize_width;
  options.channels = dataset.channels();  // the network sees video frames as it sees labelled ones
  options.num_keypoints = k;
  options.seed = config.training.rng_seed_data_pt;
  options.imgaug = data::parse_imgaug(config.training.imgaug);
  options.num_workers = plan.rank.unlabeled_workers;
  options.allocator = batch_allocator(backend);
  semi.frames = std::make_unique<data::UnlabeledFrames>(options);
  semi.source = std::make_unique<UnlabeledFramesSource>(*semi.frames);
  log.info("unsupervised losses: " + [&] {
    std::string names;
    for (const auto& t : semi.losses->terms()) names += (names.empty() ? "" : ", ") + t.name;
    return names;
  }() + " on " + std::to_string(options.videos.size()) + " video(s) of " + video_dir + ": " +
           std::to_string(semi.frames->sequence_frames()) + " consecutive frames per step (" +
           std::to_string(options.frames_per_rank) + " per rank" +
           (options.context ? ", " + std::to_string(semi.frames->rows_per_rank()) + " rows of 5 context frames" : "") +
           "), " + std::to_string(semi.frames->windows()) + " sequences" +
           (data::augments_unlabeled_frames(options.imgaug)
                ? "; augmented as lightning-pose's DALI pipeline (rotation, scale, brightness/contrast, shot "
                  "noise), keypoints mapped back before the losses"
                : ""));
  return semi;
}

long steps_per_epoch(const Config& config, const runtime::RunPlan& plan, const data::Split& split,
                     const LoaderSource& train, const SemiSupervised& semi) {
  train::EpochLengthInputs in;
  in.limit_train_batches = train::parse_batch_limit(config.training.limit_train_batches);  // checked by the key
  in.train_frames = static_cast<std::int64_t>(split.train.size());
  in.batch_per_rank = plan.rank.train_batch_size;
  in.labeled_batches = train.batches_per_pass();
  in.semi_supervised = semi.active();
  if (semi.active()) {
    const auto& counts = semi.frames->video_frame_counts();
    in.unlabeled_batches = train::lp_unlabeled_batches(std::accumulate(counts.begin(), counts.end(), std::int64_t{0}),
                                                       plan.rank.unlabeled_frames,
                                                       plan.rank.context_batch_size > 0);
  }
  return train::steps_per_epoch(in);
}

}  // namespace trainer::app
