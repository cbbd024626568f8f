// Config -> option structs (app/run_options.hpp): every key lands in its field,
// the same for train and predict.
#include <catch2/catch.hpp>  // TEST_CASE, CHECK
#include <unistd.h>           // getpid

#include <filesystem>  // std::filesystem

#include "config/config.hpp"       // Config
#include "app/run_options.hpp"  // the functions under test
#include "compute/backend.hpp"  // make_cpu_backend
#include "config_test_util.hpp"  // config_test::parse

using namespace trainer;

namespace {

Config sample_config() {
  Config c;
  c.data.image_resize_height = 96;
  c.data.image_resize_width = 128;
  c.data.downsample_factor = 3;
  c.training.imgaug = "dlc";
  c.training.rng_seed_data_pt = 7;
  c.training.drop_last = true;
  c.training.test_batch_size = 10;
  c.training.num_workers = -1;
  c.training.optimizer = "AdamW";
  c.training.weight_decay = 0.25;
  c.training.max_epochs = 9;
  c.training.min_epochs = 2;
  c.training.max_steps = 40;
  c.training.check_val_every_n_epoch = 3;
  c.training.early_stop_patience = 4;
  c.training.early_stopping = true;
  c.training.log_every_n_steps = 5;
  c.training.lr_scheduler_milestones = {4, 6};
  c.training.lr_scheduler_gamma = 0.1;
  c.training.unfreezing_epoch = 1;
  c.model.model_type = "heatmap_mhcrnn";
  c.model.backbone = "resnet18";
  return c;
}

runtime::RunPlan sample_plan() {
  runtime::RunPlan plan;
  plan.rank.train_batch_size = 3;
  plan.rank.val_batch_size = 7;
  plan.rank.num_workers = 2;
  plan.learning_rate = 0.5;
  return plan;
}

}  // namespace

TEST_CASE("train and val loader options come from the config and the plan", "[app][run_options]") {
  auto backend = compute::make_cpu_backend(1);
  const Config config = sample_config();
  const runtime::RunPlan plan = sample_plan();
  const data::LoaderOptions train = app::train_loader_options(config, plan, *backend);
  CHECK(train.batch_size == 3);
  CHECK(train.height == 96);
  CHECK(train.width == 128);
  CHECK(train.augmentation == data::Augmentation::kDlc);
  CHECK(train.seed == 7);
  CHECK(train.num_workers == 2);
  CHECK(train.drop_last);
  CHECK(train.context);  // heatmap_mhcrnn
  REQUIRE(train.allocator.allocate);  // the backend's host memory
  void* memory = train.allocator.allocate(16);
  CHECK(memory != nullptr);
  train.allocator.release(memory);

  // 5 val frames on 2 ranks: at most 3 rows per rank, below the planned 7.
  const data::LoaderOptions val = app::val_loader_options(train, plan, 5, 2);
  CHECK(val.batch_size == 3);
  CHECK(val.augmentation == data::Augmentation::kNone);
  CHECK_FALSE(val.drop_last);
  CHECK(val.height == 96);
  CHECK(val.seed == 7);
  CHECK(app::val_loader_options(train, plan, 0, 2).batch_size == 1);  // never below one row
}

TEST_CASE("predict loader options share the input settings and read the test batch", "[app][run_options]") {
  auto backend = compute::make_cpu_backend(1);
  const Config config = sample_config();
  const data::LoaderOptions small = app::predict_loader_options(config, "heatmap", 4, *backend);
  CHECK(small.batch_size == 4);  // no larger than the data set
  CHECK(small.num_workers == 1);  // num_workers -1: one worker
  CHECK_FALSE(small.context);     // the checkpoint's model type, not the config's
  CHECK(small.height == 96);
  CHECK(small.width == 128);
  CHECK(small.augmentation == data::Augmentation::kNone);
  CHECK(small.seed == 0);
  CHECK_FALSE(small.drop_last);
  CHECK(app::predict_loader_options(config, "heatmap_mhcrnn", 100, *backend).batch_size == 10);
}

TEST_CASE("sampler, model, optimizer and loop options come from the config", "[app][run_options]") {
  const Config config = sample_config();
  runtime::World world;
  world.rank = 1;
  world.size = 4;
  const data::SamplerOptions sampler = app::sampler_options(config, world);
  CHECK(sampler.num_replicas == 4);
  CHECK(sampler.rank == 1);
  CHECK(sampler.seed == 7);
  CHECK(sampler.drop_last);
  CHECK(sampler.shuffle);

  const model::ModelSpec spec = app::model_spec(config, 17);
  CHECK(spec.backbone == "resnet18");
  CHECK(spec.num_keypoints == 17);
  CHECK(spec.downsample_factor == 3);

  const train::OptimizerConfig optimizer = app::optimizer_config(config);
  CHECK(optimizer.type == "AdamW");
  CHECK(optimizer.weight_decay == 0.25);
  // `auto` (the default): torch's, as lightning-pose's AdamW, built from the lr alone.
  Config lp = config;
  lp.training.weight_decay.reset();
  CHECK(app::optimizer_config(lp).weight_decay == 0.01);
  lp.training.optimizer = "Adam";
  CHECK(app::optimizer_config(lp).weight_decay == 0.0);
  CHECK(config_test::parse({"--training.weight_decay", "auto"}).config.training.weight_decay == std::nullopt);
  CHECK(config_test::parse({"--training.optimizer", "AdamW"}).config.training.weight_decay == std::nullopt);
  CHECK(*config_test::parse({"--training.optimizer", "AdamW", "--training.weight_decay", "0"})
             .config.training.weight_decay == 0.0);

  const train::LoopConfig loop = app::loop_config(config, sample_plan());
  CHECK(loop.max_epochs == 9);
  CHECK(loop.min_epochs == 2);
  CHECK(loop.max_steps == 40);
  CHECK(loop.check_val_every_n_epoch == 3);
  CHECK(loop.early_stop_patience == 4);
  CHECK(loop.early_stopping);
  Config late = config;
  late.training.min_epochs = 50;  // above max_epochs: capped, as Lightning's max_epochs ends the run first
  CHECK(app::loop_config(late, sample_plan()).min_epochs == 9);
  CHECK(loop.log_every_n_steps == 5);
  CHECK(loop.lr.base_lr == 0.5);  // the plan's (scaled) rate
  CHECK(loop.lr.milestones == std::vector<int>{4, 6});
  CHECK(loop.lr.gamma == 0.1);
  CHECK(loop.lr.unfreezing_epoch == 1);
  CHECK(loop.out_dir.empty());  // the command's to set
}

TEST_CASE("data.video_dir: relative to data_dir as lightning-pose, else to the working directory",
          "[app][run_options]") {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("trainer-video-dir-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "project" / "videos");
  const fs::path cwd = fs::current_path();
  fs::current_path(root);
  trainer::DataConfig d;
  d.video_dir = "videos";
  d.data_dir = "project";
  CHECK(trainer::app::resolve_video_dir(d) == (root / "project" / "videos").string());  // lightning-pose's join
  d.video_dir = "project/videos";  // ${data.data_dir}/videos, already a path from here
  CHECK(trainer::app::resolve_video_dir(d) == (root / "project" / "videos").string());
  d.data_dir.clear();
  CHECK(trainer::app::resolve_video_dir(d) == (root / "project" / "videos").string());
  d.video_dir = "/abs/videos";
  CHECK(trainer::app::resolve_video_dir(d) == "/abs/videos");
  d.video_dir.clear();
  CHECK(trainer::app::resolve_video_dir(d).empty());
  fs::current_path(cwd);
  fs::remove_all(root);
}
