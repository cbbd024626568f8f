// `trainer predict`: keypoints for every frame of the data set with a checkpoint,
// written as lightning-pose writes them (predict_labeled.hpp):
//   scorer,    heatmap_tracker, heatmap_tracker, heatmap_tracker, ..., set
//   bodyparts, nose,            nose,            nose,            ...,
//   coords,    x,               y,               likelihood,      ...,
//   <frame path>, x, y, likelihood, ...,   train | validation | test | unused
// plus predictions_pixel_error.csv beside it. The set column (the run's split,
// recomputed from its configuration and seed) is there only when the data is the
// data the checkpoint was trained on. --video predicts videos (predict_video.hpp).
#include <sys/stat.h>  // stat, S_ISDIR

#include <algorithm>  // std::find, std::sort
#include <cstdio>    // std::snprintf
#include <filesystem>  // std::filesystem::exists: a mistyped run folder
#include <memory>    // std::unique_ptr
#include <sstream>   // std::ostringstream
#include <string>    // std::string
#include <vector>    // std::vector

#include <boost/program_options.hpp>  // options_description

#include "app/checkpoint_config.hpp"  // names_configuration, use_checkpoint_configuration
#include "app/commands.hpp"         // run_predict, Args
#include "app/config_parse.hpp"     // parse_command_line, FallbackConfig
#include "app/make_backend.hpp"     // predict_precision
#include "app/predict_inputs.hpp"   // is_run_dir_form, explicit_predict_calls, image_preds_csv
#include "app/predict_labeled.hpp"  // predict_labeled_frames
#include "app/run_data.hpp"         // import_dir_beside
#include "app/predict_video.hpp"    // run_predict_video (--video)
#include "app/output_files.hpp"     // remove_stale_temp_files_in, run_dir_of_checkpoint, make_directories
#include "runtime/watchdog.hpp"     // runtime::launcher_rank: rank 0 alone predicts labelled frames
#include "train/checkpoint.hpp"     // load_training_state
#include "util/env.hpp"             // capture_environment
#include "util/atomic_write.hpp"    // write_file_atomically, folder_of
#include "util/error.hpp"           // UserError
#include "util/input_file.hpp"      // check_input_file
#include "util/log.hpp"             // Log
#include "util/name_list.hpp"       // join_names

namespace po = boost::program_options;

namespace trainer::app {

namespace {
// The predictions CSV must be a file in an existing folder: found out before the
// work, not when the finished CSV is renamed into place.
void check_output_file(const std::string& out) {
  struct stat st {};
  if (out.empty() || out.back() == '/' || (::stat(out.c_str(), &st) == 0 && S_ISDIR(st.st_mode)))
    throw UserError("predict: --out '" + out + "' is a folder, not a file", "give a file name, e.g. --out " +
                        (out.empty() ? std::string(".") : out.substr(0, out.find_last_not_of('/') + 1)) +
                        "/predictions.csv");
  const std::string folder = folder_of(out);
  if (::stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw UserError("predict: the folder of --out '" + out + "' does not exist", "create " + folder + " first");
}

// The data-file lines of an INI configuration (data_files, data_dir, csv_file).
std::string data_lines(const std::string& ini) {
  std::istringstream in(ini);
  std::string out;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("data_files", 0) == 0 || line.rfind("data_dir", 0) == 0 || line.rfind("csv_file", 0) == 0)
      out += line + "\n";
  return out;
}

// Whether `config` predicts the data the checkpoint was trained on (its stored
// configuration names the same files), so that the training split applies.
bool same_data_as_training(const Config& config, const std::string& checkpoint) {
  const std::string trained = train::load_training_state(checkpoint).config_text;
  return !trained.empty() && data_lines(trained) == data_lines(config_to_ini(config));
}

bool mentions(const Args& args, const std::string& key) {
  for (const auto& a : args)
    if (a.find(key) != std::string::npos) return true;
  return false;
}

// Options of other tools that users bring along, refused with the one to use.
void refuse_foreign_options(const Args& args) {
  for (const auto& a : args) {
    const std::string name = a.substr(0, a.find('='));
    if (name == "--output_dir" || name == "--output-dir")
      throw UserError("predict: unknown option '" + name + "' (lightning-pose's train option)",
                      "predictions go to --out FILE.csv (labelled frames; default <run>/predictions.csv, or "
                      "<run>/image_preds/<csv>/predictions.csv for other data) and --video-out DIR (videos; "
                      "default <run>/video_preds)");
  }
}

// The hint for a --checkpoint that cannot be opened: the checkpoints its folder holds
// (a short run that never validated has last.h5 and no best.h5).
std::string checkpoint_hint(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path folder = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  std::vector<std::string> found;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".h5") found.push_back(it->path().filename().string());
  if (found.empty()) return "check the path of --checkpoint";
  std::sort(found.begin(), found.end());
  if (found.size() > 6) found.resize(6);
  std::string hint = "that folder holds " + join_names(found);
  if (fs::path(path).filename() == "best.h5")
    hint += " (best.h5 is written at the first validation: training.check_val_every_n_epoch)";
  return hint;
}

// The data a prediction names, for its image_preds folder: the label CSV, else the
// first data file.
std::string data_name(const Config& config) {
  if (!config.data.csv_file.empty()) return config.data.csv_file;
  return config.data.data_files.empty() ? std::string("synthetic") : config.data.data_files.front();
}

int predict_with_checkpoint(const Args& args_in, bool check_only = false) {
  po::options_description own("predict options");
  own.add_options()
      ("checkpoint", po::value<std::string>()->value_name("FILE.h5"), "checkpoint to predict with (required); without --config, the run's config.ini beside it, "
       "else the configuration stored in the checkpoint. Or, as litpose predict: trainer predict RUN_DIR "
       "VIDEO|FOLDER|LABELS.csv... (best.h5, else last.h5; CSVs to RUN_DIR/image_preds/<csv>/predictions.csv)")
      ("out", po::value<std::string>()->value_name("FILE.csv"), "predictions CSV (default: <run>/predictions.csv for the "
       "run's own data, <run>/image_preds/<csv>/predictions.csv for other data)")
      ("video", po::value<std::vector<std::string>>()->multitoken()->value_name("PATH..."),
       "predict every frame of these videos (files or folders of videos) instead of the data set: "
       "<video-out>/<video>.csv and <video>_temporal_norm.csv, as lightning-pose's video_preds; "
       "mpirun -np N shares the frames over N ranks")
      ("video-out", po::value<std::string>()->value_name("DIR"), "folder for --video's CSVs (default: <run>/video_preds)")
      ("labeled-video", "with --video: also <video-out>/labeled_videos/<video>_labeled.mp4, keypoints drawn as "
       "lightning-pose does (eval.colormap, eval.confidence_thresh_for_vid)")
      ("precision", po::value<std::string>()->default_value("fp32")->value_name("P"),
       "fp32 | bf16 | fp16 (as litpose predict; also 32 | bf16-mixed | 16-mixed): the forward pass's precision "
       "(16-bit convolutions and, on GPUs, 16-bit activations; the weights stay fp32). On CPUs the 16-bit ones "
       "are emulated: no speed-up");
  // Without --config: the run's config.ini next to the checkpoint, else the
  // configuration the checkpoint carries. Never the defaults (they would silently
  // predict the synthetic demo data with a real model).
  Args args = args_in;
  refuse_foreign_options(args);
  // A label CSV named on the command line replaces the run's data: its imported
  // data_files (from config.ini) would otherwise conflict with it.
  if (mentions(args, "data.csv_file") && !mentions(args, "data.data_files"))
    args = with_leading_overrides(args, {"data.data_files=[]"});
  std::string checkpoint;
  // --config, or `trainer predict config.yaml ...`: a YAML file as the first argument.
  const bool has_config = names_configuration(args);
  bool wants_help = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--help" || args[i] == "-h" || args[i] == "--print-config") wants_help = true;
    if (args[i] == "--checkpoint" && i + 1 < args.size()) checkpoint = args[i + 1];
    if (args[i].rfind("--checkpoint=", 0) == 0) checkpoint = args[i].substr(13);
  }
  // The checkpoint is the first thing read: a FIFO or a folder is refused before it blocks.
  if (!checkpoint.empty() && !wants_help) {
    std::error_code ec;
    const bool exists = std::filesystem::exists(checkpoint, ec);
    check_input_file(checkpoint, "cannot open checkpoint '" + checkpoint + "'",
                     exists ? "check the path of --checkpoint" : checkpoint_hint(checkpoint));
  }
  std::string config_note;
  FallbackConfig stored;
  if (!has_config && !checkpoint.empty())
    config_note = use_checkpoint_configuration(args, checkpoint, stored, /*read_checkpoint=*/!wants_help);
  const FallbackConfig* fallback = stored.text.empty() ? nullptr : &stored;
  const CommandLine cl = parse_command_line("predict", args, own, fallback);
  if (cl.help) return 0;
  if (!cl.own.count("checkpoint"))
    throw UserError("predict needs --checkpoint FILE.h5", "e.g. --checkpoint outputs/<run>/checkpoints/best.h5");
  checkpoint = cl.own["checkpoint"].as<std::string>();
  const std::string precision = predict_precision(cl.own["precision"].as<std::string>());  // before any work
  if (check_only) return 0;
  if (cl.own.count("video")) {
    if (cl.own.count("out"))
      throw UserError("predict: --out names the one CSV of labelled frames; --video writes a CSV per video",
                      "give the videos' folder with --video-out DIR (default <run>/video_preds)");
    return run_predict_video(cl, args, config_note);
  }
  // Labelled frames need no ranks: under mpirun or srun rank 0 predicts them alone
  // (the others would repeat its work and its files).
  if (runtime::launcher_rank(capture_environment()) > 0) return 0;
  const Config& config = cl.config;
  // The set column says how the training split used each frame: only meaningful
  // for the data the checkpoint was trained on. Other data goes to image_preds/ by
  // default, as lightning-pose's, never over the run's own predictions.csv.
  const bool with_sets = same_data_as_training(config, checkpoint);
  const std::string run_dir = run_dir_of_checkpoint(checkpoint);
  std::string out;
  if (cl.own.count("out")) {
    out = cl.own["out"].as<std::string>();
  } else {
    out = with_sets ? run_dir + "/predictions.csv" : image_preds_csv(run_dir, data_name(config));
    make_directories(folder_of(out));
  }
  check_output_file(out);  // before any work
  const Log log(0);
  if (!config_note.empty()) log.info(config_note);
  remove_stale_temp_files_in(folder_of(out), log);

  LabeledPredictions request;
  request.predictions_csv = out;
  request.with_sets = with_sets;
  request.import_dir = import_dir_beside(run_dir);  // not under the working directory
  request.precision = precision;
  predict_labeled_frames(config, checkpoint, request, log);
  return 0;
}
}  // namespace

int run_predict(const Args& args) {
  // A first argument that names nothing: a mistyped run folder, most likely.
  std::error_code ec;
  if (!args.empty() && args[0].rfind("-", 0) != 0 && !std::filesystem::exists(args[0], ec))
    throw UserError("predict: '" + args[0] + "' does not exist",
                    "give a run folder or a lightning-pose model directory (trainer predict RUN_DIR "
                    "VIDEO|FOLDER|LABELS.csv...), or a configuration file");
  // A checkpoint where the run folder goes: `trainer predict run/checkpoints/last.h5 video.mp4`.
  if (!args.empty() && args[0].size() > 3 && args[0].compare(args[0].size() - 3, 3, ".h5") == 0 &&
      std::filesystem::is_regular_file(args[0], ec))
    throw UserError("predict: '" + args[0] + "' is a checkpoint file, not a run folder",
                    "give it as --checkpoint " + args[0] + " [--video PATH...], or give its run folder: trainer "
                    "predict RUN_DIR VIDEO|FOLDER|LABELS.csv...");
  if (!is_run_dir_form(args)) return predict_with_checkpoint(args);
  for (const PredictCall& call : explicit_predict_calls(args)) {
    const auto out = std::find(call.args.begin(), call.args.end(), "--out");
    if (out != call.args.end() && !call.check_only) make_directories(folder_of(*(out + 1)));
    if (const int rc = predict_with_checkpoint(call.args, call.check_only)) return rc;
  }
  return 0;
}

}  // namespace trainer::app
