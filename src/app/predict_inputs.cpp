// The litpose form of `trainer predict` (see predict_inputs.hpp).
#include "app/predict_inputs.hpp"

#include <sys/stat.h>  // stat, S_ISDIR, S_ISREG

#include <algorithm>   // std::find
#include <cctype>      // std::tolower
#include <cstdlib>     // std::strtol
#include <filesystem>  // std::filesystem::absolute, directory_iterator

#include "app/config_parse.hpp"     // with_leading_overrides
#include "app/make_backend.hpp"     // predict_precision: --precision checked before inputs are skipped
#include "app/lp_model_import.hpp"  // is_lightning_pose_model_dir, open_lightning_pose_model, model_folder_overrides
#include "data/video_reader.hpp"    // video_extensions
#include "train/checkpoint.hpp"      // load_training_state: a context model's smallest batch
#include "util/error.hpp"         // UserError
#include "util/log.hpp"           // Log: litpose flags without a counterpart, skipped inputs

namespace trainer::app {
namespace {

const char* const kUsage = "trainer predict RUN_DIR VIDEO|FOLDER|LABELS.csv... [options]";

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// lightning-pose's own flags of `litpose predict` (cli/commands/predict.py at f54c477),
// taken out of the options: labeled videos unless --skip_viz, inputs with a prediction
// file skipped unless --overwrite, --batch_size N for the frames per batch.
struct LitposeFlags {
  bool skip_viz = false;
  bool overwrite = false;
  std::string batch_size;  // empty: the configuration's
};

LitposeFlags take_litpose_flags(Args& options, const Log& log) {
  LitposeFlags flags;
  Args kept;
  for (std::size_t i = 0; i < options.size(); ++i) {
    const std::string& option = options[i];
    const std::string name = option.substr(0, option.find('='));
    const bool inline_value = option.find('=') != std::string::npos;
    // The value of an option that takes one: after '=' or the next argument.
    const auto value = [&]() -> std::string {
      if (inline_value) return option.substr(option.find('=') + 1);
      if (i + 1 >= options.size() || options[i + 1].rfind("--", 0) == 0)
        throw UserError("predict: " + name + " needs a value", std::string("usage: ") + kUsage);
      return options[++i];
    };
    if (name == "--skip_viz") {
      flags.skip_viz = true;
    } else if (name == "--overwrite") {
      flags.overwrite = true;
    } else if (name == "--batch_size") {
      flags.batch_size = value();
      char* end = nullptr;
      const long n = std::strtol(flags.batch_size.c_str(), &end, 10);
      if (flags.batch_size.empty() || *end != '\0' || n < 1 || n > 100000)
        throw UserError("predict: --batch_size '" + flags.batch_size + "' is not a positive number of frames",
                        "e.g. --batch_size 32 (frames per batch of a video, or of a label CSV)");
    } else if (name == "--compile") {
      log.info("predict: --compile has no counterpart here (on a GPU the forward pass is recorded as a CUDA "
               "graph, model.cuda_graphs); ignored");
    } else if (name == "--reader") {
      log.info("predict: --reader " + value() + " has no counterpart here (FFmpeg decodes every video); ignored");
    } else if (name == "--runtime") {
      const std::string runtime = value();
      if (runtime != "eager")
        throw UserError("predict: --runtime " + runtime + " (lightning-pose's exported models) is not supported",
                        "the trainer runs its own checkpoint: leave --runtime out (eager)");
    } else if (name == "--bbox_dir") {
      throw UserError("predict: --bbox_dir (cropping each frame to a bounding box) is not supported",
                      "predict the uncropped videos or frames");
    } else {
      kept.push_back(option);
    }
  }
  options = kept;
  return flags;
}

std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}
bool is_video_name(const std::string& path) {
  const auto& known = data::video_extensions();
  return std::find(known.begin(), known.end(), lower_extension(path)) != known.end();
}
bool is_image_name(const std::string& path) {
  const std::string ext = lower_extension(path);
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".bmp" || ext == ".tif" || ext == ".tiff";
}

// What a folder input holds: videos (predicted), or only images (refused).
// Whether a folder holds a file whose name `is_kind` accepts.
bool folder_holds(const std::string& dir, bool (*is_kind)(const std::string&)) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.is_regular_file(ec) && is_kind(entry.path().string())) return true;
  return false;
}

// The checkpoint a run folder is predicted with: best.h5 (lightning-pose predicts with
// its best checkpoint), else last.h5.
std::string checkpoint_of_run(const std::string& run_dir) {
  for (const char* name : {"best.h5", "last.h5"}) {
    const std::string path = run_dir + "/checkpoints/" + name;
    if (is_file(path)) return path;
  }
  throw UserError("predict: '" + run_dir + "' holds no checkpoints/best.h5 or checkpoints/last.h5",
                  "give a run folder of `trainer train` or a lightning-pose model directory (" + std::string(kUsage) +
                      "), or --checkpoint FILE.h5");
}

std::string absolute(const std::string& path) { return std::filesystem::absolute(path).lexically_normal().string(); }

}  // namespace

bool is_run_dir_form(const Args& args) { return !args.empty() && args[0].rfind("-", 0) != 0 && is_dir(args[0]); }

std::string image_preds_csv(const std::string& run_dir, const std::string& data_name) {
  return run_dir + "/image_preds/" + std::filesystem::path(data_name).filename().string() + "/predictions.csv";
}

std::vector<PredictCall> explicit_predict_calls(const Args& args) {
  const std::string run_dir = args.at(0);
  std::size_t first_option = 1;
  while (first_option < args.size() && args[first_option].rfind("-", 0) != 0) ++first_option;
  const Args inputs(args.begin() + 1, args.begin() + long(first_option));
  Args options(args.begin() + long(first_option), args.end());
  const Log log(0);
  const LitposeFlags flags = take_litpose_flags(options, log);
  if (inputs.empty())
    throw UserError("predict: nothing to predict after the run folder '" + run_dir + "'",
                    std::string("give videos, folders of videos or label CSVs: ") + kUsage);
  for (const auto& option : options) {
    for (const char* taken : {"--checkpoint", "--video", "--video-out"})
      if (option == taken || option.rfind(std::string(taken) + "=", 0) == 0)
        throw UserError("predict: " + std::string(taken) + " given with a run folder and inputs",
                        std::string("use one form: ") + kUsage + ", or trainer predict --checkpoint FILE.h5 "
                        "[--video PATH...]");
  }
  // A lightning-pose model directory: its .ckpt as a trainer checkpoint, its config.yaml
  // (without the folders the predictions do not need: model_folder_overrides).
  Args model_options;
  std::vector<std::string> csv_overrides, video_overrides;
  std::string checkpoint;
  if (is_lightning_pose_model_dir(run_dir)) {
    const LightningPoseModel lp = open_lightning_pose_model(run_dir, options);
    checkpoint = lp.checkpoint;
    model_options = {"--config", lp.config_yaml};
    csv_overrides = model_folder_overrides(/*labelled_frames=*/true);
    video_overrides = model_folder_overrides(/*labelled_frames=*/false);
  } else {
    checkpoint = checkpoint_of_run(run_dir);
  }

  std::vector<std::string> csvs, videos;
  for (const auto& input : inputs) {
    if (is_dir(input)) {
      if (!folder_holds(input, is_video_name))
        throw UserError("predict: folder '" + input + "' holds no videos",
                        folder_holds(input, is_image_name)
                            ? "image folders are not predicted yet: list the frames in a label CSV (lightning-pose's "
                              "format) and give that CSV"
                            : "give a folder of videos (.mp4, .avi, ...), a video, or a label CSV");
      videos.push_back(input);
    } else if (!is_file(input)) {
      throw UserError("predict: input '" + input + "' does not exist", std::string("usage: ") + kUsage);
    } else if (lower_extension(input) == ".csv") {
      csvs.push_back(absolute(input));
    } else if (is_video_name(input)) {
      videos.push_back(input);
    } else if (is_image_name(input)) {
      throw UserError("predict: single images are not predicted yet ('" + input + "')",
                      "list the frames in a label CSV (lightning-pose's format) and give that CSV");
    } else {
      throw UserError("predict: '" + input + "' is neither a label CSV nor a video",
                      std::string("usage: ") + kUsage);
    }
  }

  // Option values checked before any input is skipped: a run whose every input was
  // predicted before still refuses a wrong --precision.
  for (std::size_t i = 0; i < options.size(); ++i) {
    if (options[i] == "--precision" && i + 1 < options.size()) predict_precision(options[i + 1]);
    if (options[i].rfind("--precision=", 0) == 0) predict_precision(options[i].substr(12));
  }
  // As litpose predict: an input whose prediction file exists is skipped unless --overwrite.
  const auto already_predicted = [&](const std::string& input, const std::string& csv) {
    if (flags.overwrite || !is_file(csv)) return false;
    log.info("predict: skipping " + input + " (" + csv + " exists; --overwrite predicts it again)");
    return true;
  };
  // The videos first: every rank of a launch shares them (one MPI session per process),
  // while rank 0 alone predicts the label CSVs after them (cmd_predict.cpp).
  std::vector<Args> calls;
  std::vector<Args> csv_calls;
  for (const auto& csv : csvs) {
    if (already_predicted(csv, image_preds_csv(run_dir, csv))) continue;
    // data_files cleared: the run's imported data must not stand beside the new CSV.
    Args call{"--checkpoint", checkpoint, "--out", image_preds_csv(run_dir, csv)};
    call.insert(call.end(), model_options.begin(), model_options.end());
    call.insert(call.end(), options.begin(), options.end());
    std::vector<std::string> overrides = csv_overrides;
    overrides.insert(overrides.end(), {"data.csv_file=" + csv, "data.data_files=[]"});
    if (!flags.batch_size.empty()) overrides.push_back("training.test_batch_size=" + flags.batch_size);
    csv_calls.push_back(with_leading_overrides(call, overrides));
  }
  std::vector<std::string> video_files;
  for (const auto& input : videos)
    for (const auto& video : data::list_videos(input))
      if (!already_predicted(video, run_dir + "/video_preds/" + std::filesystem::path(video).stem().string() + ".csv"))
        video_files.push_back(video);
  if (!video_files.empty()) {
    Args call{"--checkpoint", checkpoint, "--video-out", run_dir + "/video_preds"};
    call.insert(call.end(), model_options.begin(), model_options.end());
    // litpose predict draws them unless --skip_viz (which also overrides the run's
    // eval.save_vids_after_training below).
    const bool asked = std::find(options.begin(), options.end(), "--labeled-video") != options.end();
    if (!flags.skip_viz && !asked) call.push_back("--labeled-video");
    if (flags.skip_viz) video_overrides.push_back("eval.save_vids_after_training=false");
    call.push_back("--video");
    call.insert(call.end(), video_files.begin(), video_files.end());
    call.insert(call.end(), options.begin(), options.end());
    // A context model's batch holds two context frames on each side of those it predicts.
    if (!flags.batch_size.empty() && std::stol(flags.batch_size) < 5 &&
        train::load_training_state(checkpoint).model_type == "heatmap_mhcrnn")
      throw UserError("predict: --batch_size " + flags.batch_size + " is below the 5 frames a heatmap_mhcrnn "
                      "batch of a video needs (two context frames on each side of the ones it predicts)",
                      "give --batch_size 5 or more (the batch's frames minus 4 are predicted)");
    if (!flags.batch_size.empty())
      video_overrides.insert(video_overrides.end(), {"eval.video_sequence_length=" + flags.batch_size,
                                                     "eval.context_video_sequence_length=" + flags.batch_size});
    calls.push_back(with_leading_overrides(call, video_overrides));
  }
  calls.insert(calls.end(), csv_calls.begin(), csv_calls.end());
  std::vector<PredictCall> out;
  for (auto& call : calls) out.push_back({std::move(call), false});
  if (out.empty()) {  // all predicted before: the options are still checked
    Args check{"--checkpoint", checkpoint};
    check.insert(check.end(), model_options.begin(), model_options.end());
    check.insert(check.end(), options.begin(), options.end());
    out.push_back({std::move(check), true});
  }
  return out;
}

}  // namespace trainer::app
