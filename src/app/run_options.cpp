// Config -> option structs (see run_options.hpp).
#include "app/run_options.hpp"

#include <filesystem>  // std::filesystem::absolute

#include <algorithm>  // std::min, std::max

#include "app/loader_source.hpp"  // batch_allocator
#include "data/augment.hpp"       // data::parse_imgaug
#include "model/make_model.hpp"   // model::needs_context_frames
#include "train/batch_limit.hpp"  // train::parse_batch_limit

namespace trainer::app {

data::LoaderOptions loader_options(const Config& config, const std::string& model_type, compute::Backend& backend) {
  data::LoaderOptions options;
  options.allocator = batch_allocator(backend);
  options.height = config.data.image_resize_height;
  options.width = config.data.image_resize_width;
  options.context = model::needs_context_frames(model_type);
  return options;
}

data::LoaderOptions train_loader_options(const Config& config, const runtime::RunPlan& plan,
                                         compute::Backend& backend) {
  data::LoaderOptions options = loader_options(config, config.model.model_type, backend);
  options.batch_size = plan.rank.train_batch_size;
  options.augmentation = data::parse_imgaug(config.training.imgaug);
  options.hflip = config.training.imgaug_hflip;
  options.seed = config.training.rng_seed_data_pt;
  options.num_workers = plan.rank.num_workers;
  options.drop_last = config.training.drop_last;
  return options;
}

data::LoaderOptions val_loader_options(const data::LoaderOptions& train, const runtime::RunPlan& plan,
                                       std::int64_t val_frames, int world_size) {
  data::LoaderOptions options = train;
  options.batch_size = static_cast<int>(std::max<std::int64_t>(
      1, std::min<std::int64_t>(plan.rank.val_batch_size, data::samples_per_rank(val_frames, world_size, false))));
  options.augmentation = data::Augmentation::kNone;
  options.hflip = false;
  options.drop_last = false;
  return options;
}

data::LoaderOptions predict_loader_options(const Config& config, const std::string& model_type, std::int64_t frames,
                                           compute::Backend& backend) {
  data::LoaderOptions options = loader_options(config, model_type, backend);
  options.batch_size = static_cast<int>(std::min<std::int64_t>(config.training.test_batch_size, frames));
  options.num_workers = config.training.num_workers > 0 ? config.training.num_workers : 1;
  return options;
}

data::SamplerOptions sampler_options(const Config& config, const runtime::World& world) {
  data::SamplerOptions sampler;
  sampler.num_replicas = world.size;
  sampler.rank = world.rank;
  sampler.seed = config.training.rng_seed_data_pt;
  sampler.drop_last = config.training.drop_last;
  return sampler;
}

model::ModelSpec model_spec(const Config& config, int num_keypoints) {
  return {config.model.backbone, num_keypoints, config.data.downsample_factor,
          {config.data.image_resize_height, config.data.image_resize_width}};
}

model::ModelSpec checkpoint_model_spec(const train::TrainingState& state, const Config& config) {
  return {state.backbone, state.num_keypoints, state.downsample_factor,
          {config.data.image_resize_height, config.data.image_resize_width}};
}

train::OptimizerConfig optimizer_config(const Config& config) {
  train::OptimizerConfig optimizer;
  optimizer.type = config.training.optimizer;
  optimizer.weight_decay =
      config.training.weight_decay.value_or(train::default_weight_decay(train::parse_optimizer(optimizer.type)));
  return optimizer;
}

train::LoopConfig loop_config(const Config& config, const runtime::RunPlan& plan) {
  train::LoopConfig loop;
  loop.max_epochs = config.training.max_epochs;
  loop.min_epochs = std::min(config.training.min_epochs, config.training.max_epochs);
  loop.early_stopping = config.training.early_stopping;
  loop.max_steps = config.training.max_steps;
  loop.check_val_every_n_epoch = config.training.check_val_every_n_epoch;
  loop.early_stop_patience = config.training.early_stop_patience;
  loop.log_every_n_steps = config.training.log_every_n_steps;
  loop.lr.base_lr = plan.learning_rate;
  loop.lr.milestones = config.training.lr_scheduler_milestones;
  loop.lr.gamma = config.training.lr_scheduler_gamma;
  loop.lr.unfreezing_epoch = config.training.unfreezing_epoch;
  loop.checkpoint_every_n_epochs = config.training.ckpt_every_n_epochs;
  loop.accumulate_grad_batches = config.training.accumulate_grad_batches;
  loop.val_check_interval = train::parse_batch_limit(config.training.val_check_interval);  // checked by the key
  loop.save_weights_only = config.training.save_weights_only;
  loop.tensorboard.model_name = config.model.model_name;
  loop.tensorboard.heatmap_loss = "heatmap_" + config.model.heatmap_loss_type;
  loop.tensorboard.optimizer = config.training.optimizer;
  return loop;
}

std::string resolve_csv_file(const DataConfig& data) {
  namespace fs = std::filesystem;
  const fs::path csv(data.csv_file);
  if (csv.is_absolute()) return csv.lexically_normal().string();
  return (fs::absolute(data.data_dir.empty() ? fs::path(".") : fs::path(data.data_dir)) / csv).lexically_normal().string();
}

std::string resolve_video_dir(const DataConfig& data) {
  const std::string& dir = data.video_dir;
  if (dir.empty() || dir.front() == '/') return dir;
  namespace fs = std::filesystem;
  if (!data.data_dir.empty()) {
    // lightning-pose joins a relative video_dir onto data_dir; a path that already
    // names the folder from here (e.g. ${data.data_dir}/videos) is taken as it is.
    const fs::path joined = fs::absolute(fs::path(data.data_dir) / dir).lexically_normal();
    std::error_code ec;
    if (fs::exists(joined, ec) || !fs::exists(dir, ec)) return joined.string();
  }
  return fs::absolute(dir).lexically_normal().string();
}

Config with_absolute_paths(Config config) {
  config.data.video_dir = resolve_video_dir(config.data);
  const auto absolute = [](std::string& path) {
    if (!path.empty() && path.front() != '/') path = std::filesystem::absolute(path).lexically_normal().string();
  };
  for (auto& file : config.data.data_files) absolute(file);
  absolute(config.data.synthetic_file);
  absolute(config.data.data_dir);  // csv_file stays relative to it, as lightning-pose reads it
  if (config.data.data_dir.empty()) absolute(config.data.csv_file);
  absolute(config.model.backbone_weights);
  absolute(config.model.checkpoint);
  absolute(config.model.backbone_checkpoint);
  absolute(config.eval.test_videos_directory);
  return config;
}

}  // namespace trainer::app
