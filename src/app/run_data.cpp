// The run's data set and split (see run_data.hpp).
#include "app/run_data.hpp"

#include "app/output_files.hpp"        // make_directories, remove_stale_temp_files_in
#include "data/sampler.hpp"            // data::samples_per_rank
#include "data/synth.hpp"              // data::ensure_synthetic_dataset
#include "runtime/broadcast_string.hpp"  // runtime::broadcast_string: rank 0's outcome
#include "util/atomic_write.hpp"       // folder_of
#include "util/error.hpp"              // UserError

namespace trainer::app {

RunData open_run_data(const Config& config, const runtime::World& world, const Log& log) {
  RunData run;
  if (config.data.data_files.empty()) {
    const std::string path = config.data.synthetic_file;
    std::string error;
    if (world.rank == 0) {
      try {
        data::SynthOptions options;
        options.keypoints = config.data.num_keypoints > 0 ? config.data.num_keypoints : options.keypoints;
        options.seed = config.training.rng_seed_data_pt;
        const auto slash = path.rfind('/');
        if (slash != std::string::npos) make_directories(path.substr(0, slash));
        remove_stale_temp_files_in(folder_of(path), log);
        if (data::ensure_synthetic_dataset(path, options))
          log.info("generated the synthetic demo data set " + path + " (" + std::to_string(options.frames) +
                   " frames, " + std::to_string(options.size) + "x" + std::to_string(options.size) + ")");
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    // Every rank learns whether rank 0 succeeded, so none waits forever.
    error = runtime::broadcast_string(world, error);
    if (!error.empty()) throw UserError("could not create the synthetic data set: " + error);
    run.files = {path};
  } else {
    run.files = data::expand_data_files(config.data.data_files);
  }
  data::DatasetExpectations expect;
  expect.num_keypoints = config.data.num_keypoints;
  expect.keypoint_names = config.data.keypoint_names;
  run.dataset = std::make_unique<data::Dataset>(data::Dataset::open(run.files, expect));
  const auto sizes = data::split_sizes_from_probabilities(run.dataset->size(), config.training.train_prob,
                                                          config.training.val_prob);
  run.split = data::make_split(run.dataset->size(), sizes, config.training.rng_seed_data_pt);
  return run;
}

void check_train_batch_fits(const Config& config, const runtime::RunPlan& plan, const RunData& run,
                            const runtime::World& world) {
  const auto frames = static_cast<std::int64_t>(run.split.train.size());
  data::check_batch_fits("train", frames, config.training.train_batch_size, config.training.drop_last, run.files[0]);
  // With drop_last each rank keeps floor(frames / ranks) rows: fewer than its batch is no step at all.
  const std::int64_t per_rank = data::samples_per_rank(frames, world.size, config.training.drop_last);
  if (config.training.drop_last && per_rank < plan.rank.train_batch_size)
    throw UserError("the train split of " + run.files[0] + " (" + std::to_string(frames) + " frames) gives each of " +
                        std::to_string(world.size) + " ranks " + std::to_string(per_rank) +
                        " frames, fewer than its batch of " + std::to_string(plan.rank.train_batch_size) +
                        ": with drop_last there would be no batch at all",
                    "lower training.train_batch_size, set drop_last = false, or label more frames");
}

}  // namespace trainer::app
