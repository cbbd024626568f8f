// `trainer train`: one rank's whole training run.
//   launch (MPI session, --nprocs self-spawn) -> plan -> data + split -> model
//   -> optional --init-weights / --resume -> epoch loop -> checkpoints, metrics.csv
// Rank 0 writes the output folder: config.ini (the effective configuration),
// split.csv, metrics.csv and checkpoints/{initial,best,last}.h5.
#include <algorithm>  // std::min, std::max
#include <iostream>  // std::cout
#include <memory>    // std::unique_ptr
#include <string>    // std::string

#include <boost/program_options.hpp>  // options_description

#include "app/commands.hpp"         // run_train, Args
#include "app/config_parse.hpp"     // parse_command_line, config_to_ini
#include "app/loader_source.hpp"    // LoaderSource
#include "app/run_setup.hpp"        // open_run_data, make_run_backend, output folder helpers
#include "compute/backend.hpp"      // compute::make_cpu_backend
#include "data/augment.hpp"         // data::parse_imgaug
#include "data/loader.hpp"          // data::Loader
#include "data/sampler.hpp"         // data::samples_per_rank
#include "data/split.hpp"           // data::write_split_csv
#include "model/make_model.hpp"     // model::make_pose_model
#include "runtime/env.hpp"          // runtime::capture_environment
#include "runtime/mpi_session.hpp"  // runtime::MpiSession
#include "runtime/run_plan.hpp"     // runtime::plan_run
#include "runtime/visible_gpus.hpp" // runtime::visible_gpu_count
#include "train/checkpoint.hpp"     // save/load checkpoints
#include "train/distributed_training.hpp"  // train::DistributedTraining
#include "train/optimizer.hpp"      // train::Optimizer
#include "train/step.hpp"           // train::StepRunner
#include "train/train_loop.hpp"     // train::TrainLoop
#include "util/error.hpp"           // UserError
#include "util/log.hpp"             // Log

namespace po = boost::program_options;

namespace trainer::app {

namespace {

// The checkpoint's run folder: <run>/checkpoints/x.h5 -> <run>.
std::string run_dir_of_checkpoint(const std::string& path) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  const auto parent = dir.rfind('/');
  if (dir.size() >= 11 && dir.compare(dir.size() - 11, 11, "checkpoints") == 0)
    return parent == std::string::npos ? "." : dir.substr(0, parent);
  return dir;
}

}  // namespace

int run_train(const Args& args) {
  po::options_description own("train options");
  own.add_options()
      ("out", po::value<std::string>()->value_name("DIR"),
       "output folder (default: outputs/<date>/<time>; with --resume: the checkpoint's run folder)")
      ("resume", po::value<std::string>()->value_name("CHECKPOINT"),
       "continue a run from its checkpoint (e.g. <run>/checkpoints/last.h5)")
      ("init-weights", po::value<std::string>()->value_name("FILE.h5"),
       "load backbone weights by name (e.g. ImageNet weights from scripts/torchvision_to_h5.py)")
      ("save-initial", "write checkpoints/initial.h5 before the first step")
      ("max-steps", po::value<long>()->value_name("N"), "stop after N optimizer steps (overrides training.max_steps)")
      ("nprocs", po::value<int>()->default_value(1)->value_name("N"),
       "start N ranks on this machine without mpirun (self-spawn)");
  const CommandLine cl = parse_command_line("train", args, own);
  if (cl.help) return 0;
  Config config = cl.config;
  if (cl.own.count("max-steps")) {
    config.training.max_steps = cl.own["max-steps"].as<long>();
    if (config.training.max_steps < -1)  // the range of training.max_steps
      throw UserError("train: --max-steps " + std::to_string(config.training.max_steps) + " is not a step count",
                      "--max-steps N stops after N optimizer steps; -1: no limit");
  }
  if (cl.own.count("resume") && cl.own.count("init-weights"))
    throw UserError("train: --resume and --init-weights cannot be given together",
                    "--resume continues a run with all its weights; --init-weights starts a new run from backbone "
                    "weights: give one of them");

  Args spawn_args{"train"};
  spawn_args.insert(spawn_args.end(), args.begin(), args.end());
  const runtime::Env env = runtime::capture_environment();
  runtime::MpiSession session(spawn_args, cl.own["nprocs"].as<int>(), env);
  const runtime::World& world = session.world();
  const Log log(world.rank);
  const runtime::RunPlan plan = runtime::plan_run(config, world, runtime::visible_gpu_count(), env);
  for (const auto& w : plan.warnings) log.warn(w);
  for (const auto& w : plan.rank.warnings) log.warn_this_rank(w);

  // ---- output folder -------------------------------------------------------
  const std::string resume = cl.own.count("resume") ? cl.own["resume"].as<std::string>() : "";
  std::string out_dir = cl.own.count("out") ? cl.own["out"].as<std::string>()
                        : !resume.empty()   ? run_dir_of_checkpoint(resume)
                                            : timestamped_output_dir();
  out_dir = broadcast_string(world, out_dir);

  // ---- data ----------------------------------------------------------------
  RunData run = open_run_data(config, world, log);
  const data::Dataset& dataset = *run.dataset;
  check_train_batch_fits(config, plan, run, world);  // every rank, so all stop together
  if (world.rank == 0) {
    make_directories(out_dir);
    remove_stale_temp_files_in(out_dir, log);
    remove_stale_temp_files_in(out_dir + "/checkpoints", log);
    write_text_atomically(out_dir + "/config.ini", config_to_ini(config));
    data::write_split_csv(out_dir + "/split.csv", run.split, dataset.frame_paths());
  }
  log.info("data: " + std::to_string(dataset.size()) + " frames (" + std::to_string(run.split.train.size()) +
           " train, " + std::to_string(run.split.val.size()) + " val, " + std::to_string(run.split.test.size()) +
           " test), " + std::to_string(dataset.num_keypoints()) + " keypoints; output: " + out_dir);

  // The backend first: loader batches live in its (pinned) host memory.
  auto backend = make_run_backend(config, plan, log);  // run_setup.hpp: precision, CPU emulation warning
  compute::Stream& stream = backend->default_stream();
  data::LoaderOptions train_opts;
  train_opts.allocator = batch_allocator(*backend);
  train_opts.batch_size = plan.rank.train_batch_size;
  train_opts.height = config.data.image_resize_height;
  train_opts.width = config.data.image_resize_width;
  train_opts.augmentation = data::parse_imgaug(config.training.imgaug);
  train_opts.seed = config.training.rng_seed_data_pt;
  train_opts.num_workers = plan.rank.num_workers;
  train_opts.drop_last = config.training.drop_last;
  train_opts.context = model::needs_context_frames(config.model.model_type);
  data::LoaderOptions val_opts = train_opts;
  // A rank never holds more val rows than ceil(val / ranks): a larger batch would only allocate more.
  const std::int64_t val_rows =
      data::samples_per_rank(static_cast<std::int64_t>(run.split.val.size()), world.size, false);
  val_opts.batch_size = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(plan.rank.val_batch_size, val_rows)));
  val_opts.augmentation = data::Augmentation::kNone;
  val_opts.drop_last = false;
  data::Loader train_loader(dataset, train_opts);
  data::Loader val_loader(dataset, val_opts);
  data::SamplerOptions sampler;
  sampler.num_replicas = world.size;
  sampler.rank = world.rank;
  sampler.seed = config.training.rng_seed_data_pt;
  sampler.drop_last = config.training.drop_last;
  LoaderSource train_source(train_loader, run.split.train, sampler);
  sampler.shuffle = false;
  LoaderSource val_source(val_loader, run.split.val, sampler);

  // ---- model and optimizer -------------------------------------------------
  model::ModelSpec spec;
  spec.backbone = config.model.backbone;
  spec.num_keypoints = dataset.num_keypoints();
  spec.downsample_factor = config.data.downsample_factor;
  const auto network = model::make_pose_model(*backend, config.model.model_type, spec);
  model::PoseModel& net = *network;
  net.initialize(config.training.rng_seed_model_pt, stream);
  train::OptimizerConfig opt_config;
  opt_config.type = config.training.optimizer;
  opt_config.weight_decay = config.training.weight_decay;
  train::Optimizer optimizer(net.store(), opt_config);

  train::TrainingState state;
  if (!resume.empty()) {
    state = train::load_training_state(resume);
    if (!state.model_type.empty() && state.model_type != config.model.model_type)
      throw UserError("checkpoint '" + resume + "' is a " + state.model_type + " model but the configuration asks for " +
                          config.model.model_type,
                      "resume with the configuration the run was started with (" + run_dir_of_checkpoint(resume) +
                          "/config.ini)");
    if (state.backbone != spec.backbone || state.num_keypoints != spec.num_keypoints ||
        state.downsample_factor != spec.downsample_factor)
      throw UserError("checkpoint '" + resume + "' is a " + state.backbone + " with " +
                          std::to_string(state.num_keypoints) + " keypoints (downsample " +
                          std::to_string(state.downsample_factor) + ") but the configuration asks for " +
                          spec.backbone + " with " + std::to_string(spec.num_keypoints) + " (downsample " +
                          std::to_string(spec.downsample_factor) + ")",
                      "resume with the configuration the run was started with (" + run_dir_of_checkpoint(resume) +
                          "/config.ini)");
    train::load_model(resume, net.store(), stream);
    train::load_optimizer(resume, optimizer, stream);
    log.info("resumed from " + resume + " after epoch " + std::to_string(state.epochs_completed - 1) + ", step " +
             std::to_string(state.global_step));
  } else if (cl.own.count("init-weights")) {
    const std::string path = cl.own["init-weights"].as<std::string>();
    const int n = train::load_backbone_weights(path, net.store(), stream);
    log.info("loaded " + std::to_string(n) + " backbone tensors from " + path);
  }
  state.world_size = world.size;
  state.rng_seed_data = config.training.rng_seed_data_pt;
  state.rng_seed_model = config.training.rng_seed_model_pt;
  state.config_text = config_to_ini(config);
  state.model_type = config.model.model_type;
  state.backbone = spec.backbone;
  state.num_keypoints = spec.num_keypoints;
  state.downsample_factor = spec.downsample_factor;

  // ---- the loop ------------------------------------------------------------
  train::LoopConfig loop;
  loop.max_epochs = config.training.max_epochs;
  loop.min_epochs = config.training.min_epochs;
  loop.max_steps = config.training.max_steps;
  loop.check_val_every_n_epoch = config.training.check_val_every_n_epoch;
  loop.early_stop_patience = config.training.early_stop_patience;
  loop.log_every_n_steps = config.training.log_every_n_steps;
  loop.lr.base_lr = plan.learning_rate;
  loop.lr.milestones = config.training.lr_scheduler_milestones;
  loop.lr.gamma = config.training.lr_scheduler_gamma;
  loop.lr.unfreezing_epoch = config.training.unfreezing_epoch;
  loop.out_dir = out_dir;
  loop.save_initial = cl.own.count("save-initial") > 0;
  loop.world_size = world.size;

  log.info("model: " + spec.backbone + " " + config.model.model_type + ", " + std::to_string(net.store().parameter_count()) +
           " parameters; " + backend->description() + "; batch " + std::to_string(plan.rank.train_batch_size) +
           " per rank, lr " + std::to_string(plan.learning_rate));
  train::StepRunner runner(*backend, stream, net, train::parse_heatmap_loss(config.model.heatmap_loss_type));
  runner.loss_scaler().restore({state.loss_scale, state.loss_scale_growth_tracker});  // 16-mixed resumes its scale
  // Data-parallel: rank 0's weights and optimizer state everywhere, then the
  // loop's gradient buckets, synchronized batch norm and metric sums (all no-ops
  // with one rank).
  train::DistributedTraining ddp(world.comm, plan.backend, config.distributed, net, plan.rank.device);
  ddp.broadcast_initial_state(optimizer, stream);
  ddp.set_step(state.global_step);
  train::TrainLoop trainer(runner, net, optimizer, train_source, val_source.empty() ? nullptr : &val_source, loop,
                           ddp.hooks(), log, stream);
  state = trainer.run(state);
  if (ddp.active()) log.info(ddp.overlap_report());
  log.info("done: " + std::to_string(state.epochs_completed) + " epochs, " + std::to_string(state.global_step) +
           " steps; checkpoints in " + out_dir + "/checkpoints, metrics in " + out_dir + "/metrics.csv");
  return 0;
}

}  // namespace trainer::app
