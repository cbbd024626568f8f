// `trainer train`: one rank's whole training run.
//   launch (MPI session, --nprocs self-spawn) -> plan -> data + split -> model
//   -> optional --init-weights / --resume -> epoch loop -> checkpoints, metrics.csv
// Rank 0 writes the output folder: config.ini (the effective configuration),
// split.csv, metrics.csv and checkpoints/{initial,best,last}.h5.
#include <signal.h>   // SIGINT, SIGTERM, SIGUSR1
#include <sys/stat.h>  // stat

#include <chrono>    // std::chrono::steady_clock (the time line)
#include <cstdint>   // std::int64_t
#include <cstdio>    // std::snprintf
#include <ctime>       // std::time, localtime_r, strftime: the set-aside folder's name
#include <cstring>     // std::strlen
#include <map>         // std::map: the split's values by key
#include <filesystem>  // std::filesystem::exists, path
#include <cstdlib>   // std::system
#include <iostream>  // std::cout
#include <memory>    // std::unique_ptr
#include <optional>  // std::optional: a watchdog stage that ends early
#include <sstream>   // std::ostringstream (the 16-mixed line)
#include <string>    // std::string

#include <boost/program_options.hpp>  // options_description

#include "app/checkpoint_config.hpp"  // names_configuration, use_checkpoint_configuration: --resume alone
#include "app/commands.hpp"         // run_train, Args
#include "app/config_parse.hpp"     // parse_command_line, config_to_ini
#include "app/hf_weights.hpp"       // hugging_face_weights
#include "app/loader_source.hpp"    // LoaderSource
#include "app/semi_supervised.hpp"  // make_semi_supervised
#include "app/make_backend.hpp"     // make_run_backend
#include "app/output_files.hpp"     // run folder helpers: timestamped_output_dir, run_dir_of_checkpoint, ...
#include "app/run_data.hpp"         // open_run_data, check_train_batch_fits
#include "app/run_options.hpp"      // Config -> loader, sampler, model, optimizer and loop options; resolve_video_dir
#include "compute/backend.hpp"      // compute::Backend, Stream
#include "compute/losses/heatmap_loss_registry.hpp"  // compute::parse_heatmap_loss
#include "data/dataset.hpp"        // data::label_source_of: config.yaml names an import's CSV
#include "data/loader.hpp"          // data::Loader
#include "data/split.hpp"           // data::write_split_csv
#include "data/video_reader.hpp"    // data::list_videos: the videos' folders checked before the work
#include "model/backbone_registry.hpp"  // model::backbone_weights_url, backbone_hugging_face_id
#include "model/make_model.hpp"     // model::make_pose_model
#include "app/predict_labeled.hpp"   // predict_labeled_frames: predictions.csv after training
#include "app/predict_video.hpp"     // predict_videos (eval.predict_vids_after_training)
#include "runtime/agreed_failure.hpp"  // runtime::on_every_rank_or_none
#include "runtime/broadcast_string.hpp"  // runtime::broadcast_string: rank 0's output folder
#include "util/env.hpp"          // capture_environment
#include "runtime/mpi_session.hpp"  // runtime::MpiSession
#include "runtime/run_plan.hpp"     // runtime::plan_run
#include "runtime/visible_gpus.hpp" // runtime::visible_gpu_count
#include "train/checkpoint.hpp"     // save/load checkpoints
#include "train/distributed_training.hpp"  // train::DistributedTraining
#include "train/optimizer.hpp"      // train::Optimizer
#include "train/pretrained_weights.hpp"  // train::load_pretrained_backbone
#include "train/step.hpp"           // train::StepRunner
#include "train/tensorboard_log.hpp"  // train::TensorBoardLog::version_folder
#include "train/train_loop.hpp"     // train::TrainLoop
#include "app/lp_evaluation.hpp"    // evaluate_label_csvs_after_training
#include "app/lp_model_import.hpp"  // weights_file_of: --init-weights FOLDER
#include "app/lp_model_dir.hpp"     // write_lightning_pose_config, write_train_status, train_status_json, ...
#include "util/atomic_write.hpp"    // write_file_atomically, check_output_file
#include "util/background_file_writer.hpp"  // BackgroundFileWriter (train_status.json)
#include "util/error.hpp"           // UserError
#include "util/input_file.hpp"      // check_input_file
#include "util/log.hpp"             // Log
#include "util/name_list.hpp"       // join_names
#include "data/context.hpp"          // ContextIndex: frames without neighbours
#include "util/signal_cleanup.hpp"  // GracefulStop

namespace po = boost::program_options;

namespace trainer::app {

namespace {

// A checkpoint resumes only the model it holds: the same type, backbone, keypoints
// and downsampling as the configuration asks for.
void check_resumable(const std::string& resume, const train::TrainingState& state, const std::string& model_type,
                     const model::ModelSpec& spec) {
  if (!state.model_type.empty() && state.model_type != model_type)
    throw UserError("checkpoint '" + resume + "' is a " + state.model_type + " model but the configuration asks for " +
                        model_type,
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
}

// The values of a stored configuration (config_to_ini) that decide the train/val/test
// split, by key: the data and its fractions and seed.
std::map<std::string, std::string> split_values(const std::string& ini) {
  std::istringstream in(ini);
  std::map<std::string, std::string> out;
  for (std::string line; std::getline(in, line);)
    for (const char* key : {"data_files", "data_dir", "csv_file", "train_prob", "val_prob", "train_frames",
                            "rng_seed_data_pt"})
      if (line.rfind(std::string(key) + " = ", 0) == 0) out[key] = line.substr(std::strlen(key) + 3);
  return out;
}

// A resume under another split trains on frames the run held out (and the reverse),
// and its best.h5 was chosen on other validation frames: allowed (new labels, a
// deliberate change), but said.
void warn_other_split(const std::string& resume, const train::TrainingState& state, const Config& config,
                      const Log& log) {
  if (state.config_text.empty()) return;
  const auto before = split_values(state.config_text), now = split_values(config_to_ini(with_absolute_paths(config)));
  std::string changed;
  for (const auto& [key, value] : now) {
    const auto was = before.find(key);
    if (was == before.end() || was->second == value) continue;  // a key older runs did not store: no claim
    changed += (changed.empty() ? "" : "; ") + key + " = " + value + " (was " + was->second + ")";
  }
  if (changed.empty()) return;
  log.warn("--resume " + resume + ": the data or its split differs from the run's (" + changed +
           "): frames it trained on may now be validation or test frames, and the reverse");
}

// A new run (not --resume) in a folder that holds another run's checkpoints: those are
// moved to checkpoints/before-<time>/, never deleted, so that nothing (predictions after
// this run, `trainer predict RUN`) takes the other run's best.h5 for this one's.
void set_aside_previous_checkpoints(const std::string& out_dir, const Log& log) {
  namespace fs = std::filesystem;
  const fs::path checkpoints = fs::path(out_dir) / "checkpoints";
  std::vector<fs::path> previous;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(checkpoints, ec))
    if (entry.is_regular_file(ec) && entry.path().extension() == ".h5") previous.push_back(entry.path());
  if (previous.empty()) return;
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "before-%Y%m%d-%H%M%S", &tm);
  const fs::path aside = checkpoints / stamp;
  make_directories(aside.string());
  for (const auto& file : previous) {
    fs::rename(file, aside / file.filename(), ec);
    if (ec)
      throw SystemError("cannot move " + file.string() + " to " + aside.string() + ": " + ec.message());
  }
  log.warn(out_dir + " held another run's checkpoints: moved to " + aside.string() +
           " (this is a new run; --resume auto continues a run instead)");
}

// A backbone without pretrained weights: say so, and say it loudly when lightning-pose
// would have downloaded weights for it or when it will stay frozen while random.
void warn_random_backbone(const Config& config, const Log& log) {
  const std::string& name = config.model.backbone;
  const std::string hugging_face = model::backbone_hugging_face_id(name);
  if (!hugging_face.empty())
    log.warn("model.backbone = " + name + " starts from " + hugging_face + "'s weights in lightning-pose, which " +
             "transformers downloads (" + model::backbone_weights_url(name) + "); none was found in the Hugging "
             "Face cache: download model.safetensors and set model.backbone_weights to it (or to its cache "
             "folder): without it the backbone starts from random weights");
  else if (name.find('_') != std::string::npos)
    log.warn("model.backbone = " + name + " starts from pretrained weights in lightning-pose, which downloads " +
             model::backbone_weights_url(name) + "; download it and set model.backbone_weights to the file: "
             "without it the backbone starts from random weights");
  if (config.training.unfreezing_epoch > 0)
    log.warn("the backbone has random weights and stays frozen until epoch " +
             std::to_string(config.training.unfreezing_epoch) +
             " (training.unfreezing_epoch): set model.backbone_weights (docs/MODEL.md), or "
             "training.unfreezing_epoch = 0 to train it from the start");
  else
    log.info("backbone: random initialisation (no model.backbone_weights)");
}

// model.cuda_graphs (on by default): steps replay recordings where the run allows it
// (StepRunner::record_steps); otherwise one line says why every step runs op by op.
// CPUs ignore it without a word, as they do float32_matmul_precision.
void enable_step_recording(const Config& config, const compute::Backend& backend, int world_size,
                           train::StepRunner& runner, const Log& log) {
  if (backend.kind() != compute::DeviceKind::cuda) return;
  std::string why_not;
  if (world_size > 1) why_not = "multi-process runs are not recorded yet";
  else if (config.training.accumulate_grad_batches > 1) why_not = "training.accumulate_grad_batches is above 1";
  if (!why_not.empty()) {
    log.info("model.cuda_graphs: " + why_not + "; every step runs op by op");
    return;
  }
  runner.record_steps([&log](const std::string& line) { log.warn(line); });
  log.info("model.cuda_graphs: training steps of one shape replay a recorded CUDA graph (false runs them op by op)");
}

// The run as a lightning-pose model directory (app/lp_model_dir.hpp): the best
// checkpoint as tb_logs/<model_name>/version_<n>/checkpoints/*-best.ckpt. After the
// run's own outputs, so a failure here costs nothing of them: a warning.
void write_lightning_pose_checkpoint_of_run(const Config& config, const std::string& best,
                                            const std::string& out_dir, const Log& log) {
  if (!has_lightning_pose_checkpoint(config)) {
    log.info("no lightning-pose .ckpt: " + config.model.model_type + " models are written as trainer checkpoints only");
    return;
  }
  try {
    const std::string version_dir = train::TensorBoardLog::version_folder(out_dir, config.model.model_name, true);
    log.info("lightning-pose checkpoint: " + write_lightning_pose_checkpoint(config, best, version_dir));
    for (const auto& path : write_periodic_lightning_pose_checkpoints(config, out_dir + "/checkpoints", version_dir))
      log.info("lightning-pose checkpoint (training.ckpt_every_n_epochs): " + path);
  } catch (const std::exception& e) {
    log.warn(std::string("could not write the lightning-pose checkpoint: ") + e.what());
  }
}

// The files rank 0 writes into the run folder: none may be a folder (a rename
// cannot replace one; it failed with exit 1 after the work).
void check_run_outputs(const std::string& out_dir) {
  for (const char* name : {"config.ini", "config.yaml", "train_status.json", "split.csv", "metrics.csv",
                           "predictions.csv", "predictions_pixel_error.csv"})
    check_output_file(out_dir + "/" + name, std::string("the run's ") + name);
  for (const char* name : {"initial.h5", "best.h5", "last.h5"})
    check_output_file(out_dir + "/checkpoints/" + name, std::string("the run's checkpoints/") + name);
}

// After a stop signal: SLURM's warning (SIGUSR1) requeues the job when asked to, as
// Lightning's SLURM plugin does; the exit code says what stopped the run.
int finish_stopped_run(int signal, const Config& config, const Env& env, const Log& log, long step,
                       const std::string& out_dir) {
  const char* name = signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "SIGUSR1";
  log.info(std::string("stopped by ") + name + " after step " + std::to_string(step) + "; " + out_dir +
           "/checkpoints/last.h5 holds the exact position: continue with --resume auto --out " + out_dir);
  if (signal == SIGUSR1) {
    const auto job = env.find("SLURM_JOB_ID");
    const bool digits = job != env.end() && !job->second.empty() &&
                        job->second.find_first_not_of("0123456789") == std::string::npos;
    if (digits && config.distributed.slurm_auto_requeue && log.is_root()) {
      const std::string command = "scontrol requeue " + job->second;
      const int rc = std::system(command.c_str());
      if (rc == 0)
        log.info("requeued SLURM job " + job->second + " (" + command + "): SLURM now ends this run, so its "
                 "\"CANCELLED ... DUE TO JOB REQUEUE\" and srun's termination lines are expected, and starts the "
                 "job again under the same id");
      else
        log.warn(command + " failed (status " + std::to_string(rc) + "): resubmit the job with --resume auto");
    }
    return 0;
  }
  return 128 + signal;  // the shell's convention: 130 for Ctrl-C, 143 for SIGTERM
}

// `--resume auto`: the run folder's last.h5 when it exists, else a fresh start (the
// first incarnation of a job that SLURM may requeue). Rank 0 decides for all.
std::string resolve_auto_resume(const std::string& out_dir, const runtime::World& world, const Log& log) {
  const std::string last = out_dir + "/checkpoints/last.h5";
  struct stat st {};
  std::string chosen = ::stat(last.c_str(), &st) == 0 ? last : std::string();
  chosen = runtime::broadcast_string(world, chosen);
  if (chosen.empty()) log.info("--resume auto: no " + last + " yet, starting a new run");
  return chosen;
}

// Where a finished run's time went (rank 0's clock), for users and the device check's
// wall-time comparison: set-up before the training loop (MPI, data, model), then the
// loop's steps, validation and the rest.
std::string time_report(double setup_seconds, const train::TrainLoop::Timing& t) {
  char line[256];
  std::snprintf(line, sizeof line,
                "time: set-up %.1f s; training %.1f s: steps %.1f s, validation %.1f s, checkpoints and epoch "
                "ends %.1f s",
                setup_seconds, t.total, t.steps, t.validation, t.other());
  return line;
}

}  // namespace

namespace {
// A run trained from one imported HDF5 file: its config.yaml names the label CSV it
// was imported from and that CSV's folder of images (the file's "source" and
// "image_root"; the CSV's folder for files imported before image_root was written),
// as lightning-pose's data.csv_file and data.data_dir, where lightning-pose's tools
// look for the labelled frames. Nothing when the CSV is gone or the file was not
// imported from one.
void name_imported_labels(Config& lp) {
  if (!lp.data.csv_file.empty() || lp.data.data_files.size() != 1) return;
  namespace fs = std::filesystem;
  const data::LabelSource labels = data::label_source_of(lp.data.data_files.front());
  const fs::path csv(labels.source);
  std::error_code ec;
  if (csv.extension() != ".csv" || !csv.is_absolute() || !fs::is_regular_file(csv, ec)) return;
  const fs::path root = labels.image_root.empty() ? csv.parent_path() : fs::path(labels.image_root);
  lp.data.data_dir = root.string();
  const fs::path relative = csv.lexically_relative(root);
  const bool inside = !relative.empty() && *relative.begin() != "..";
  lp.data.csv_file = inside ? relative.string() : csv.string();
}
}  // namespace

int run_train(const Args& args_in) {
  po::options_description own("train options");
  own.add_options()
      ("out", po::value<std::string>()->value_name("DIR"),
       "output folder (default: outputs/<date>/<time>; with --resume: the checkpoint's run folder)")
      ("resume", po::value<std::string>()->value_name("CHECKPOINT"),
       "continue a run from its checkpoint (e.g. <run>/checkpoints/last.h5; without a configuration, with the "
       "run's config.ini, else the checkpoint's stored one); `auto`: from --out's "
       "checkpoints/last.h5 when it exists, else start (for jobs that SLURM requeues)")
      ("init-weights", po::value<std::string>()->value_name("FILE"),
       "same as --model.backbone_weights FILE: pretrained backbone weights (.pth, .ckpt, .safetensors, .h5; a "
       "lightning-pose model directory or a run folder: its checkpoint)")
      ("save-initial", "write checkpoints/initial.h5 before the first step")
      ("max-steps", po::value<long>()->value_name("N"), "stop after N optimizer steps (overrides training.max_steps)")
      ("dump-gradients", po::value<std::string>()->value_name("FILE.h5"),
       "debugging: write the all-reduced gradients of one step (as the optimizer reads them) to FILE.h5")
      ("dump-gradients-step", po::value<long>()->value_name("N"),
       "the global step (1-based) whose gradients --dump-gradients writes (default: this run's first)")
      ("nprocs", po::value<int>()->default_value(1)->value_name("N"),
       "start N ranks on this machine without mpirun (self-spawn)");
  // `train --resume CHECKPOINT` without a configuration continues with the run's own
  // (its config.ini, else the checkpoint's stored one), as predict does.
  Args args = args_in;
  std::string config_note;
  FallbackConfig stored;
  {
    std::string resume_path, out;
    bool wants_help = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (args[i] == "--resume" && i + 1 < args.size()) resume_path = args[i + 1];
      if (args[i].rfind("--resume=", 0) == 0) resume_path = args[i].substr(9);
      if (args[i] == "--out" && i + 1 < args.size()) out = args[i + 1];
      if (args[i].rfind("--out=", 0) == 0) out = args[i].substr(6);
      if (args[i] == "--help" || args[i] == "-h") wants_help = true;
    }
    // --resume auto continues --out's last.h5 when there is one (resolve_auto_resume).
    if (resume_path == "auto" && !out.empty()) resume_path = out + "/checkpoints/last.h5";
    if (!resume_path.empty() && resume_path != "auto" && !names_configuration(args) && !wants_help &&
        std::filesystem::is_regular_file(resume_path))
      config_note = use_checkpoint_configuration(args, resume_path, stored);
  }
  const CommandLine cl = parse_command_line("train", args, own, stored.text.empty() ? nullptr : &stored);
  if (cl.help) return 0;
  Config config = cl.config;
  if (cl.own.count("max-steps")) {
    config.training.max_steps = cl.own["max-steps"].as<long>();
    if (config.training.max_steps < -1)  // the range of training.max_steps
      throw UserError("train: --max-steps " + std::to_string(config.training.max_steps) + " is not a step count",
                      "--max-steps N stops after N optimizer steps; -1: no limit");
  }
  if (cl.own.count("init-weights")) config.model.backbone_weights = cl.own["init-weights"].as<std::string>();
  if (cl.own.count("resume") && cl.own.count("init-weights"))
    throw UserError("train: --resume and --init-weights cannot be given together",
                    "--resume continues a run with all its weights; --init-weights starts a new run from backbone "
                    "weights: give one of them");
  const std::string dump_gradients = cl.own.count("dump-gradients") ? cl.own["dump-gradients"].as<std::string>() : "";
  const long dump_gradients_step = cl.own.count("dump-gradients-step") ? cl.own["dump-gradients-step"].as<long>() : 0;
  if (cl.own.count("dump-gradients-step") && dump_gradients.empty())
    throw UserError("--dump-gradients-step needs --dump-gradients", "name the file: --dump-gradients FILE.h5");
  if (cl.own.count("dump-gradients-step") && dump_gradients_step < 1)
    throw UserError("--dump-gradients-step must be >= 1, got " + std::to_string(dump_gradients_step));
  if (cl.own.count("out") && cl.own["out"].as<std::string>().empty())
    throw UserError("train: --out is empty", "name the run folder, e.g. --out outputs/run1 (without --out: "
                                             "outputs/<date>/<time>)");
  // The files the run will read are checked before anything starts: a FIFO or a
  // folder in their place is refused now, not when it blocks or after the set-up.
  if (cl.own.count("resume") && cl.own["resume"].as<std::string>() != "auto") {
    const std::string& path = cl.own["resume"].as<std::string>();
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
      throw UserError("train: --resume " + path + " is a folder, not a checkpoint",
                      "give its checkpoint (--resume " + path + "/checkpoints/last.h5), or --resume auto --out " + path +
                          " to continue the run in that folder");
    check_input_file(path, "cannot open checkpoint '" + path + "'", "check the path of --resume");
  }
  // The label project first: the video folders below default to folders of data.data_dir,
  // so a wrong data_dir must be named as such, not as a missing video folder.
  if (!config.data.csv_file.empty() && config.data.data_files.empty()) {
    std::error_code ec;
    if (!config.data.data_dir.empty() && !std::filesystem::is_directory(config.data.data_dir, ec))
      throw UserError("data.data_dir '" + config.data.data_dir + "' is not a folder" +
                          from_working_directory(config.data.data_dir),
                      "set data.data_dir to the project folder that holds data.csv_file and labeled-data/");
    const std::string csv_path = resolve_csv_file(config.data);
    check_input_file(csv_path, "cannot open data.csv_file '" + csv_path + "'",
                     "data.csv_file is relative to data.data_dir: name the project's label CSV");
  }
  // The videos to predict after training: checked now (each one opens and has frames),
  // not after the whole training.
  if (config.eval.predict_vids_after_training && !config.eval.test_videos_directory.empty()) {
    try {
      for (const std::string& video : data::list_videos(config.eval.test_videos_directory)) (void)data::VideoReader(video);
    } catch (const UserError& e) {
      // lightning-pose's configs write test_videos_directory: ${data.video_dir}: a
      // mistyped video_dir then shows here first, so the key that holds it is named.
      if (config.eval.test_videos_directory == config.data.video_dir)
        throw UserError("data.video_dir (also eval.test_videos_directory): " + std::string(e.what()),
                        "fix data.video_dir; eval.test_videos_directory repeats it (lightning-pose's "
                        "${data.video_dir}), and eval.predict_vids_after_training=false predicts no videos after "
                        "training");
      throw UserError("eval.test_videos_directory: " + std::string(e.what()),
                      "eval.predict_vids_after_training predicts these videos after training: give a video or a "
                      "folder of videos, or eval.predict_vids_after_training=false");
    }
  }
  // The unsupervised losses' videos: checked now, by the key's name, not after the
  // import and the model are built.
  if (!config.model.losses_to_use.empty()) {
    const std::string dir = resolve_video_dir(config.data);  // not empty: the configuration's checks saw to it
    const std::string losses = "model.losses_to_use (" + join_names(config.model.losses_to_use) + ")";
    try {
      data::list_videos(dir);
    } catch (const UserError& e) {
      throw UserError("data.video_dir: " + std::string(e.what()),
                      losses + " reads unlabelled frames from data.video_dir (relative to data.data_dir): give a "
                               "folder of videos, or model.losses_to_use=[] to train supervised only");
    }
  }
  // A folder: a lightning-pose model directory's .ckpt, or a run folder's best.h5;
  // first, so that a ViT's run or model folder is not searched as a Hugging Face cache.
  if (!config.model.backbone_weights.empty()) config.model.backbone_weights = weights_file_of(config.model.backbone_weights);
  // The ViTs' Hugging Face files: another given folder's, or the Hugging Face cache's.
  config.model.backbone_weights =
      hugging_face_weights(config.model.backbone_weights, config.model.backbone, capture_environment());
  if (!config.model.backbone_weights.empty())
    check_input_file(config.model.backbone_weights,
                     "cannot open backbone weights '" + config.model.backbone_weights + "'",
                     "check model.backbone_weights / --init-weights");
  if (!config.model.backbone_checkpoint.empty())
    check_input_file(config.model.backbone_checkpoint,
                     "cannot open model.backbone_checkpoint '" + config.model.backbone_checkpoint + "'",
                     "give a ViT-MAE checkpoint (.safetensors or torch.save) for vitb_imagenet");
  // lightning-pose's model.checkpoint: a .ckpt, or the one a folder holds.
  if (!config.model.checkpoint.empty()) {
    config.model.checkpoint = lightning_pose_ckpt_of(config.model.checkpoint);
    check_input_file(config.model.checkpoint, "cannot open model.checkpoint '" + config.model.checkpoint + "'",
                     "give a lightning-pose .ckpt or model directory");
  }

  // SLURM's warning (SIGUSR1) from here on, set-up included: acted on at the first step.
  std::optional<GracefulStop> stop_signals(std::in_place);
  Args spawn_args{"train"};
  spawn_args.insert(spawn_args.end(), args.begin(), args.end());
  const Env env = capture_environment();
  const auto setup_start = std::chrono::steady_clock::now();  // the time line after training counts from here
  runtime::MpiSession session(spawn_args, cl.own["nprocs"].as<int>(), env, config.distributed.collective_timeout);
  const runtime::World& world = session.world();
  Log log(world.rank);
  if (!config_note.empty()) log.info(config_note);
  // Warnings of the set-up (a CPU precision emulated, ...) wait until every check has
  // passed: a refused run prints its error alone (released before the loop).
  log.hold_warnings();
  // One node with too few GPUs fails its plan alone: every rank stops with the cause.
  const runtime::RunPlan plan = runtime::on_every_rank_or_none(
      session, [&] { return runtime::plan_run(config, world, runtime::visible_gpu_count(), env); });
  // The plan's warnings wait until everything the run needs has been checked: a run
  // that is refused prints its error alone (print_run_warnings below).

  // ---- output folder -------------------------------------------------------
  std::string resume = cl.own.count("resume") ? cl.own["resume"].as<std::string>() : "";
  const bool auto_resume = resume == "auto";
  if (auto_resume && !cl.own.count("out"))
    throw UserError("train: --resume auto needs --out DIR", "name the run folder that a requeued job continues, "
                                                            "e.g. --out outputs/$SLURM_JOB_ID");
  if (auto_resume) resume.clear();
  std::string out_dir = cl.own.count("out") ? cl.own["out"].as<std::string>()
                        : !resume.empty()   ? run_dir_of_checkpoint(resume)
                                            : timestamped_output_dir();
  out_dir = runtime::broadcast_string(world, out_dir);
  if (auto_resume) resume = resolve_auto_resume(out_dir, world, log);

  // ---- data ----------------------------------------------------------------
  // Rank-local failures (a file one node cannot read, an --out rank 0 cannot write)
  // stop every rank with the cause, not with a transport error on the others.
  RunData run = runtime::on_every_rank_or_none(
      session, [&] { return open_run_data(config, world, log, import_dir_beside(out_dir)); });
  // lightning-pose's config.yaml keeps the label CSV (its tools read csv_file, not
  // the imported HDF5 file that config.ini names below).
  const Config lp_config = with_absolute_paths(config);
  if (!run.imported.empty()) {
    // The run's config.ini names the imported file, so predict and --resume read it
    // without importing again.
    config.data.data_files = {run.imported};
    config.data.csv_file.clear();
  }
  const data::Dataset& dataset = *run.dataset;
  check_train_batch_fits(config, plan, run, world);  // every rank, so all stop together
  const model::ModelSpec spec = model_spec(config, dataset.num_keypoints());
  // The checkpoint to resume is read and checked before anything is written: a refused
  // --resume leaves the run folder as it was. Every rank reads it; one that cannot
  // stops them all with the cause.
  train::TrainingState state;
  if (!resume.empty())
    runtime::on_every_rank_or_none(session, [&] {
      state = train::load_training_state(resume);
      check_resumable(resume, state, config.model.model_type, spec);
    });
  if (!resume.empty() && log.is_root()) warn_other_split(resume, state, config, log);
  // The run folder is only checked here; it is written once every check of the set-up
  // has passed (below), so that a refused run leaves an existing run as it was.
  runtime::on_every_rank_or_none(session, [&] {
    if (world.rank == 0) check_run_outputs(out_dir);  // a folder where a file goes: refused before any work
  });
  log.info("data: " + std::to_string(dataset.size()) + " frames (" + std::to_string(run.split.train.size()) +
           " train, " + std::to_string(run.split.val.size()) + " val, " + std::to_string(run.split.test.size()) +
           " test), " + std::to_string(dataset.num_keypoints()) + " keypoints; output: " + out_dir);

  // The backend first: loader batches live in its (pinned) host memory.
  auto backend = runtime::on_every_rank_or_none(session, [&] {
    return make_run_backend(config, plan, log);  // make_backend.hpp: precision, CPU emulation warning
  });
  compute::Stream& stream = backend->default_stream();
  const data::LoaderOptions train_opts = train_loader_options(config, plan, *backend);
  data::Loader train_loader(dataset, train_opts);
  data::Loader val_loader(dataset, val_loader_options(train_opts, plan, std::int64_t(run.split.val.size()), world.size));
  data::SamplerOptions sampler = sampler_options(config, world);
  LoaderSource train_source(train_loader, run.split.train, sampler);
  sampler.shuffle = false;
  LoaderSource val_source(val_loader, run.split.val, sampler);

  // ---- model and optimizer -------------------------------------------------
  const auto network = model::make_pose_model(*backend, config.model.model_type, spec);
  model::PoseModel& net = *network;
  net.initialize(config.training.rng_seed_model_pt, stream);
  train::Optimizer optimizer(net.store(), optimizer_config(config));

  // Every rank reads the checkpoint's tensors; one that cannot stops them all with the cause.
  runtime::on_every_rank_or_none(session, [&] {
    if (!resume.empty()) {
      train::load_model(resume, net.store(), stream);
      train::load_optimizer(resume, optimizer, stream);
      log.info("resumed from " + resume +
               (state.batches_into_epoch > 0
                    ? " in epoch " + std::to_string(state.epochs_completed) + " after batch " +
                          std::to_string(state.batches_into_epoch)
                    : " after epoch " + std::to_string(state.epochs_completed - 1)) +
               ", step " + std::to_string(state.global_step));
    } else if (!config.model.backbone_weights.empty()) {
      const std::string& path = config.model.backbone_weights;
      const train::PretrainedLoad got = train::load_pretrained_backbone(path, net.store(), stream);
      log.info("backbone: loaded " + std::to_string(got.tensors) + " tensors from " + path + " (" + got.format +
               (got.ignored > 0 ? "; " + std::to_string(got.ignored) + " tensors of other layers ignored" : "") + ")");
    }
    // lightning-pose lays model.backbone_checkpoint over vitb_imagenet's MAE weights
    // when it builds the backbone; other backbones never read it.
    if (resume.empty() && !config.model.backbone_checkpoint.empty()) {
      if (config.model.backbone == "vitb_imagenet") {
        const std::string& path = config.model.backbone_checkpoint;
        const train::PretrainedLoad got = train::load_vit_mae_checkpoint(path, net.store(), stream);
        log.info("model.backbone_checkpoint: loaded " + std::to_string(got.tensors) + " encoder tensors from " + path +
                 " (" + got.format + (got.ignored > 0 ? "; " + std::to_string(got.ignored) + " skipped" : "") +
                 ", lightning-pose's strict=False load)");
      } else {
        log.warn("model.backbone_checkpoint is read only with model.backbone vitb_imagenet (as in lightning-pose); "
                 "ignored for " + config.model.backbone);
      }
    }
    // After the backbone weights, as lightning-pose loads model.checkpoint into the
    // model it built (pretrained backbone included); a --resume replaces both.
    if (resume.empty() && !config.model.checkpoint.empty()) {
      const LightningPoseWeights got = load_lightning_pose_weights(config.model.checkpoint, net.store(), stream);
      log.info("model.checkpoint: loaded " + std::to_string(got.loaded) + " tensors from " + config.model.checkpoint +
               (got.kept > 0 ? "; " + std::to_string(got.kept) + " of the model's keep their initial values" : "") +
               (got.skipped > 0 ? "; " + std::to_string(got.skipped) + " of the file's not read" : "") +
               " (weights only: lightning-pose's strict=False load)");
    }
  });
  state.world_size = world.size;
  state.rng_seed_data = config.training.rng_seed_data_pt;
  state.rng_seed_model = config.training.rng_seed_model_pt;
  state.config_text = config_to_ini(with_absolute_paths(config));
  state.model_type = config.model.model_type;
  state.backbone = spec.backbone;
  state.num_keypoints = spec.num_keypoints;
  state.downsample_factor = spec.downsample_factor;
  // Everything a checkpoint holds besides the tensors, written once into memory now:
  // what cannot be saved fails here, not at the first checkpoint after hours of training.
  train::check_state_writable(state);

  // ---- the loop ------------------------------------------------------------
  train::LoopConfig loop = loop_config(config, plan);
  loop.out_dir = out_dir;
  bool periodic_ckpts = config.training.ckpt_every_n_epochs > 0 && has_lightning_pose_checkpoint(config);
  // The progress file after every epoch, written by a thread of its own: its atomic
  // write syncs the file and the folder, which on a loaded or network file system can
  // take longer than an epoch's steps (mirror-mouse: 5 steps of a few ms each).
  BackgroundFileWriter progress(out_dir + "/train_status.json");
  loop.on_epoch_end = [&](int epochs_completed) {
    // lightning-pose's JSONTrainingProgressTracker: EVALUATING once the last epoch is
    // done (the predictions after training follow), TRAINING before.
    const char* status = epochs_completed < config.training.max_epochs ? "TRAINING" : "EVALUATING";
    progress.write(train_status_json(status, epochs_completed, config.training.max_epochs));
    // lightning-pose's periodic .ckpt files as their .h5 appear (written in the
    // background: one not yet on disk is converted after a later epoch, or at the end).
    if (!periodic_ckpts) return;
    try {
      const std::string version_dir = train::TensorBoardLog::version_folder(out_dir, config.model.model_name, true);
      for (const auto& path : write_periodic_lightning_pose_checkpoints(config, out_dir + "/checkpoints", version_dir))
        log.info("lightning-pose checkpoint (training.ckpt_every_n_epochs): " + path);
    } catch (const std::exception& e) {
      log.warn(std::string("lightning-pose's periodic checkpoints stop until the end of training: ") + e.what());
      periodic_ckpts = false;
    }
  };
  loop.save_initial = cl.own.count("save-initial") > 0;
  loop.world_size = world.size;
  loop.dump_gradients = dump_gradients;
  loop.dump_gradients_step = dump_gradients_step;
  loop.stop_signals = &*stop_signals;

  log.info("model: " + spec.backbone + " " + config.model.model_type + ", " + std::to_string(net.store().parameter_count()) +
           " parameters; " + backend->description() + "; batch " + std::to_string(plan.rank.train_batch_size) +
           " per rank, lr " + std::to_string(plan.learning_rate));
  train::StepRunner runner(*backend, stream, net, compute::parse_heatmap_loss(config.model.heatmap_loss_type));
  runner.loss_scaler().restore({state.loss_scale, state.loss_scale_growth_tracker});  // 16-mixed resumes its scale
  runner.set_uniform_heatmaps_for_missing(config.training.uniform_heatmaps_for_nan_keypoints);
  runner.set_model_seed(config.training.rng_seed_model_pt, world.rank);  // the network's own train-mode draws
  // Semi-supervised: every rank opens the videos and fits the PCA; one that cannot
  // (a missing or short video) stops them all with the cause.
  SemiSupervised semi = runtime::on_every_rank_or_none(session, [&] {
    return make_semi_supervised(config, plan, world, dataset, run.split, *backend, stream, log);
  });
  // lightning-pose's epoch length: semi-supervised epochs cycle the labelled frames.
  train_source.set_steps_per_epoch(steps_per_epoch(config, plan, run.split, train_source, semi));
  // A val_check_interval the epoch cannot hold fails here, before the communicator and the loop.
  train::val_check_batches(loop.val_check_interval, train_source.batches_per_epoch());
  train::gradient_dump_step(loop, state.global_step);  // a --dump-gradients-step this run never reaches
  // ---- the run folder: every check has passed --------------------------------
  runtime::on_every_rank_or_none(session, [&] {
    if (world.rank != 0) return;
    make_directories(out_dir + "/checkpoints");  // here, not at the first checkpoint, so a bad --out fails before the loop
    remove_stale_temp_files_in(out_dir, log);
    remove_stale_temp_files_in(out_dir + "/checkpoints", log);
    if (resume.empty()) set_aside_previous_checkpoints(out_dir, log);
    write_file_atomically(out_dir + "/config.ini", config_to_ini(with_absolute_paths(config)));
    data::write_split_csv(out_dir + "/split.csv", run.split, dataset.frame_paths());
    Config lp = lp_config;  // lightning-pose needs the keypoints named (data from HDF5 files may not say)
    if (lp.data.num_keypoints <= 0) lp.data.num_keypoints = dataset.num_keypoints();
    if (lp.data.keypoint_names.empty()) lp.data.keypoint_names = dataset.keypoint_names();
    name_imported_labels(lp);
    write_lightning_pose_config(out_dir, lp);
    write_train_status(out_dir, "TRAINING", state.epochs_completed, config.training.max_epochs);
  });
  // Everything is checked: now the warnings about the run.
  log.release_warnings();
  for (const auto& w : plan.warnings) log.warn(w);
  for (const auto& w : plan.rank.warnings) log.warn_this_rank(w);
  const bool mae_checkpoint = !config.model.backbone_checkpoint.empty() && config.model.backbone == "vitb_imagenet";
  if (resume.empty() && config.model.backbone_weights.empty() && config.model.checkpoint.empty() && !mae_checkpoint)
    warn_random_backbone(config, log);
  // lightning-pose's get_model (models/factory.py) refuses a backbone with "vit" in its
  // name at another height than width; this trainer takes any grid of patches.
  if (config.model.backbone.find("vit") != std::string::npos &&
      config.data.image_resize_height != config.data.image_resize_width)
    log.warn("data.image_resize_dims " + std::to_string(config.data.image_resize_height) + "x" +
             std::to_string(config.data.image_resize_width) + " with " + config.model.backbone +
             ": lightning-pose refuses ViT models whose height and width differ (\"ViT model requires resized "
             "height and width to be equal\"), so this run's model folder (config.yaml, tb_logs/) will not load in "
             "lightning-pose; the trainer's own predict reads it (hint: equal height and width keep both)");
  if (config.model.model_type == "heatmap_mhcrnn" && dataset.has_video_info()) {
    // The context head learns from neighbouring frames; without them it sees one frame five times.
    const std::int64_t alone = data::ContextIndex(dataset).frames_without_neighbours();
    if (alone * 2 > dataset.size())
      log.warn("heatmap_mhcrnn: " + std::to_string(alone) + " of " + std::to_string(dataset.size()) +
               " labelled frames have none of their neighbours t-2..t+2 (no such images beside them), so their "
               "context is the frame itself, as in lightning-pose (hint: extract the frames around each labelled "
               "one into its folder before importing, or train model_type heatmap)");
  }
  if (const std::int64_t occluded = dataset.occluded_with_coordinates(); occluded > 0)
    log.warn(std::to_string(occluded) + " keypoint label(s) flagged visible=1 (occluded) have x, y coordinates: the "
             "flag wins and their target is the uniform heatmap, as in lightning-pose (docs/DATA.md)");
  if (config.model.cuda_graphs) enable_step_recording(config, *backend, world.size, runner, log);
  if (semi.active()) {
    runner.set_unsupervised(semi.losses.get());
    loop.unlabeled = semi.source.get();
    loop.anneal = config.losses;
  }
  if (!config.training.limit_train_batches.empty())
    log.info("epoch: " + std::to_string(train_source.batches_per_epoch()) + " batches (training.limit_train_batches = " +
             config.training.limit_train_batches + "; a pass of the labelled rows is " +
             std::to_string(train_source.batches_per_pass()) + ")");
  else if (train_source.batches_per_epoch() != train_source.batches_per_pass())
    log.info("epoch: " + std::to_string(train_source.batches_per_epoch()) + " steps, the " +
             std::to_string(train_source.batches_per_pass()) + " labelled batches of a pass cycling (lightning-pose's "
             "semi-supervised max(10, ceil(train frames / batch per rank)))");
  // Data-parallel: rank 0's weights and optimizer state everywhere, then the
  // loop's gradient buckets, synchronized batch norm and metric sums (all no-ops
  // with one rank).
  // The communicator's own deadlines start with its first collective; its
  // rendezvous (communicator duplicates, Gloo's address exchange) needs the watchdog's.
  auto communicator_setup = std::make_optional(session.watchdog().stage("start-up: " + plan.backend +
                                                                        " communicator set-up"));
  train::DistributedTraining ddp(world.comm, plan.backend, config.distributed, net, plan.rank.device,
                                 &session.watchdog());
  communicator_setup.reset();
  ddp.broadcast_initial_state(optimizer, stream);
  ddp.set_step(state.global_step);
  train::TrainLoop trainer(runner, net, optimizer, train_source, val_source.empty() ? nullptr : &val_source, loop,
                           ddp.hooks(), log, stream);
  const double setup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - setup_start).count();
  stop_signals->in_training_loop(true);  // SIGINT and SIGTERM too stop at a step boundary
  state = trainer.run(state);
  // Training is over: signals end the process (predictions are atomic files). A run a
  // signal stopped keeps recording them, so its requeue's SIGTERM (scontrol requeue
  // ends the job step) cannot cut its shutdown short.
  if (trainer.stopped_by_signal() == 0) stop_signals.reset();
  if (ddp.active()) log.info(ddp.overlap_report());
  if (const auto& c = runner.recording_counts(); c.steps > 0)
    log.info("model.cuda_graphs: " + std::to_string(c.replayed) + " of " + std::to_string(c.steps) +
             " training steps replayed a recording (" + std::to_string(c.recorded) + " recorded; a buffer that "
             "moves, or work at another image size, starts them again)");
  // A ViT whose attention cuDNN could not fuse ran the batched products: slower, same results.
  if (const std::string note = backend->transformer_ops().fused_attention_note(); !note.empty())
    log.warn("fused attention: " + note);
  if (train::LossScaler& scaler = runner.loss_scaler(); scaler.enabled()) {
    // GradScaler skips a step silently; one line says how often it did in this run.
    const long skipped = scaler.skipped_steps();
    std::ostringstream line;
    line << "16-mixed: loss scale " << scaler.state().scale << " at the end; " << skipped
         << " step(s) of this run skipped for inf/NaN gradients";
    if (skipped > 0) line << " (the scale then halves; a few early on are normal)";
    log.info(line.str());
  }
  if (trainer.stopped_by_signal() != 0)
    return finish_stopped_run(trainer.stopped_by_signal(), config, env, log, state.global_step, out_dir);
  log.info(time_report(setup_seconds, trainer.timing()));
  log.info("done: " + std::to_string(state.epochs_completed) + " epochs, " + std::to_string(state.global_step) +
           " steps; checkpoints in " + out_dir + "/checkpoints, metrics in " + out_dir + "/metrics.csv");
  // lightning-pose's output files: predictions over every labelled frame with the best
  // checkpoint, and their pixel errors, with the split's sets (rank 0, one process).
  if (log.is_root() && state.global_step > 0) {
    std::string best = out_dir + "/checkpoints/best.h5";
    if (!std::filesystem::exists(best)) best = out_dir + "/checkpoints/last.h5";
    LabeledPredictions predictions;
    predictions.predictions_csv = out_dir + "/predictions.csv";
    predict_labeled_frames(config, best, predictions, Log(0, true));
    log.info("predictions with " + best + ": " + predictions.predictions_csv + ", " + out_dir +
             "/predictions_pixel_error.csv");
    try {  // after the run's own outputs: a bad _new/_test CSV costs nothing of them
      evaluate_label_csvs_after_training(lp_config, best, out_dir, log);
    } catch (const std::exception& e) {
      log.warn(std::string("lightning-pose's evaluation after training stopped: ") + e.what());
    }
    write_lightning_pose_checkpoint_of_run(config, best, out_dir, log);
  }
  if (config.eval.predict_vids_after_training && !config.eval.test_videos_directory.empty()) {
    // lightning-pose's eval.predict_vids_after_training: the best checkpoint (the last
    // when there was no validation), every rank sharing the frames.
    VideoPredictRequest videos;
    videos.checkpoint = out_dir + "/checkpoints/best.h5";
    if (!std::filesystem::exists(videos.checkpoint)) videos.checkpoint = out_dir + "/checkpoints/last.h5";
    videos.inputs = {config.eval.test_videos_directory};
    videos.out_dir = out_dir + "/video_preds";
    videos.keypoint_names = dataset.keypoint_names();
    videos.labeled_videos = config.eval.save_vids_after_training;
    set_pca_labels(videos, dataset, run.split);
    predict_videos(session, config, videos, log);
  }
  if (log.is_root()) {
    try {
      progress.wait();  // the last epoch's TRAINING must not land after COMPLETED
    } catch (const std::exception& e) {
      log.warn(std::string("train_status.json: an epoch's update failed: ") + e.what());
    }
    // lightning-pose's tracker ends with completed = total = max_epochs, whatever stopped
    // the training (early stopping, --max-steps).
    write_train_status(out_dir, "COMPLETED", config.training.max_epochs, config.training.max_epochs);
  }
  return 0;
}

}  // namespace trainer::app
