#pragma once
// Config -> the option structs of the layers below. The one place a config key
// becomes a loader, sampler, model, optimizer or loop setting, shared by `train`
// and `predict`; a new key is read here, not in a command.
#include <cstdint>  // std::int64_t
#include <string>   // std::string

#include "config/config.hpp"         // Config
#include "compute/backend.hpp"    // compute::Backend (batch memory)
#include "data/loader.hpp"        // data::LoaderOptions
#include "data/sampler.hpp"       // data::SamplerOptions
#include "model/pose_model.hpp"   // model::ModelSpec
#include "runtime/run_plan.hpp"   // runtime::RunPlan
#include "runtime/world.hpp"      // runtime::World
#include "train/checkpoint.hpp"   // train::TrainingState
#include "train/optimizer.hpp"    // train::OptimizerConfig
#include "train/train_loop.hpp"   // train::LoopConfig

namespace trainer::app {

// What every loader of a command shares: the network input size, context frames
// for `model_type`, and batches in the backend's host memory (pinned for CUDA).
// The backend must outlive the loader.
data::LoaderOptions loader_options(const Config& config, const std::string& model_type, compute::Backend& backend);

// Training batches: this rank's planned batch size and workers, augmentation, drop_last.
data::LoaderOptions train_loader_options(const Config& config, const runtime::RunPlan& plan,
                                         compute::Backend& backend);

// Validation batches: the train loader's input without augmentation or drop_last,
// and a batch no larger than a rank's share of the `val_frames` (a larger one would
// only allocate more).
data::LoaderOptions val_loader_options(const data::LoaderOptions& train, const runtime::RunPlan& plan,
                                       std::int64_t val_frames, int world_size);

// Prediction batches over all `frames` of the data set, in order, by one process.
data::LoaderOptions predict_loader_options(const Config& config, const std::string& model_type, std::int64_t frames,
                                           compute::Backend& backend);

// This rank's share of every epoch (shuffled; validation turns shuffle off).
data::SamplerOptions sampler_options(const Config& config, const runtime::World& world);

// The network for `num_keypoints` keypoints (the data set's).
model::ModelSpec model_spec(const Config& config, int num_keypoints);
// The network a checkpoint holds (its backbone, keypoints and downsample factor),
// for images of the configuration's size.
model::ModelSpec checkpoint_model_spec(const train::TrainingState& state, const Config& config);

train::OptimizerConfig optimizer_config(const Config& config);

// Epochs, stopping, logging and the learning-rate schedule (plan.learning_rate is
// the configured rate scaled for the run's ranks); the run's own settings (output
// folder, world size, debugging dumps) are the command's to add.
train::LoopConfig loop_config(const Config& config, const runtime::RunPlan& plan);

// data.video_dir as a path from the working directory, absolute: lightning-pose's rule
// (a relative video_dir is inside data_dir) unless the relative path already names an
// existing folder from here and data_dir/video_dir does not exist.
std::string resolve_video_dir(const DataConfig& data);
// data.csv_file as an absolute path: lightning-pose's rule (a relative csv_file is
// inside data_dir; without data_dir, from the working directory).
std::string resolve_csv_file(const DataConfig& data);

// The configuration with every file and folder path made absolute (against the
// current directory), as the run folder's config.ini and checkpoints store it, so
// `predict` and `--resume` work from any directory.
Config with_absolute_paths(Config config);

}  // namespace trainer::app
