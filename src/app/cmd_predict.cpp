// `trainer predict`: keypoints for every frame of the data set with a checkpoint,
// written as a lightning-pose / DeepLabCut predictions CSV:
//   scorer,    trainer, trainer, trainer,    ..., set
//   bodyparts, nose,    nose,    nose,       ...,
//   coords,    x,       y,       likelihood, ...,
//   <frame path>, x, y, likelihood, ...,          train | val | test
// Coordinates are pixels of the stored frame; likelihood is the soft-argmax
// confidence; the last column says which split set the frame belongs to (the
// run's split, recomputed from its configuration and seed).
#include <sys/stat.h>  // stat, S_ISDIR

#include <cstdio>    // std::snprintf
#include <fstream>   // std::ifstream
#include <memory>    // std::unique_ptr
#include <sstream>   // std::ostringstream
#include <string>    // std::string
#include <vector>    // std::vector

#include <boost/program_options.hpp>  // options_description

#include "app/commands.hpp"         // run_predict, Args
#include "app/config_parse.hpp"     // parse_command_line, FallbackConfig
#include "app/make_backend.hpp"     // make_predict_backend
#include "app/predict_video.hpp"    // run_predict_video (--video)
#include "app/output_files.hpp"     // remove_stale_temp_files_in, run_dir_of_checkpoint
#include "app/run_data.hpp"         // open_run_data
#include "app/run_options.hpp"      // predict_loader_options
#include "compute/backend.hpp"      // compute::Backend
#include "compute/losses/heatmap_mse.hpp"  // compute::heatmap_mse_loss (the runner needs one; predict computes none)
#include "data/loader.hpp"          // data::Loader
#include "data/split.hpp"           // data::set_names
#include "model/make_model.hpp"     // model::make_pose_model
#include "runtime/world.hpp"        // runtime::World
#include "train/checkpoint.hpp"     // load_training_state, load_model
#include "train/step.hpp"           // train::StepRunner
#include "util/atomic_write.hpp"    // write_file_atomically, folder_of
#include "util/error.hpp"           // UserError
#include "util/log.hpp"             // Log

namespace po = boost::program_options;

namespace trainer::app {

namespace {
bool file_exists(const std::string& path) { return std::ifstream(path).good(); }

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

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}
}  // namespace

int run_predict(const Args& args_in) {
  po::options_description own("predict options");
  own.add_options()
      ("checkpoint", po::value<std::string>()->value_name("FILE.h5"), "checkpoint to predict with (required); without --config, the run's config.ini beside it, "
       "else the configuration stored in the checkpoint")
      ("out", po::value<std::string>()->value_name("FILE.csv"), "predictions CSV (default: <run>/predictions.csv)")
      ("video", po::value<std::vector<std::string>>()->multitoken()->value_name("PATH..."),
       "predict every frame of these videos (files or folders of videos) instead of the data set: "
       "<video-out>/<video>.csv and <video>_temporal_norm.csv, as lightning-pose's video_preds; "
       "mpirun -np N shares the frames over N ranks")
      ("video-out", po::value<std::string>()->value_name("DIR"), "folder for --video's CSVs (default: <run>/video_preds)")
      ("labeled-video", "with --video: also <video-out>/labeled_videos/<video>_labeled.mp4, keypoints drawn as "
       "lightning-pose does (eval.colormap, eval.confidence_thresh_for_vid)");
  // Without --config: the run's config.ini next to the checkpoint, else the
  // configuration the checkpoint carries. Never the defaults (they would silently
  // predict the synthetic demo data with a real model).
  Args args = args_in;
  std::string checkpoint;
  // `trainer predict config.yaml ...`: a YAML file as the first argument is the config.
  bool has_config = !args.empty() && args[0].rfind("-", 0) != 0 &&
                    (args[0].size() > 5 && (args[0].compare(args[0].size() - 5, 5, ".yaml") == 0 ||
                                            args[0].compare(args[0].size() - 4, 4, ".yml") == 0));
  bool wants_help = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--config" || args[i].rfind("--config=", 0) == 0) has_config = true;
    if (args[i] == "--help" || args[i] == "-h" || args[i] == "--print-config") wants_help = true;
    if (args[i] == "--checkpoint" && i + 1 < args.size()) checkpoint = args[i + 1];
    if (args[i].rfind("--checkpoint=", 0) == 0) checkpoint = args[i].substr(13);
  }
  std::string config_note;
  FallbackConfig stored;
  const FallbackConfig* fallback = nullptr;
  if (!has_config && !checkpoint.empty()) {
    const std::string beside = run_dir_of_checkpoint(checkpoint) + "/config.ini";
    if (file_exists(beside)) {
      args.insert(args.begin(), {"--config", beside});
      config_note = "configuration: " + beside;
    } else if (!wants_help) {
      stored.text = train::load_training_state(checkpoint).config_text;
      stored.name = checkpoint + " (its stored configuration)";
      if (stored.text.empty())
        throw UserError("checkpoint '" + checkpoint + "' carries no configuration and there is no " + beside,
                        "give the configuration the model was trained with: --config <run>/config.ini");
      fallback = &stored;
      config_note = "configuration: the one stored in " + checkpoint + " (no " + beside + ")";
    }
  }
  const CommandLine cl = parse_command_line("predict", args, own, fallback);
  if (cl.help) return 0;
  if (!cl.own.count("checkpoint"))
    throw UserError("predict needs --checkpoint FILE.h5", "e.g. --checkpoint outputs/<run>/checkpoints/best.h5");
  checkpoint = cl.own["checkpoint"].as<std::string>();
  if (cl.own.count("video")) return run_predict_video(cl, args, config_note);
  const std::string out = cl.own.count("out") ? cl.own["out"].as<std::string>() : run_dir_of_checkpoint(checkpoint) + "/predictions.csv";
  check_output_file(out);  // before any work
  const Config& config = cl.config;
  const Log log(0);
  if (!config_note.empty()) log.info(config_note);
  remove_stale_temp_files_in(folder_of(out), log);

  const train::TrainingState state = train::load_training_state(checkpoint);
  runtime::World world;  // one process: predictions need no ranks
  RunData run = open_run_data(config, world, log);
  const data::Dataset& dataset = *run.dataset;
  if (state.num_keypoints != dataset.num_keypoints())
    throw UserError("checkpoint '" + checkpoint + "' predicts " + std::to_string(state.num_keypoints) +
                        " keypoints but the data has " + std::to_string(dataset.num_keypoints()),
                    "use the configuration the model was trained with (--config <run>/config.ini)");

  auto backend = make_predict_backend(config, log);
  auto& stream = backend->default_stream();
  // The checkpoint knows its model type (older checkpoints: the configuration's).
  const std::string& model_type = state.model_type.empty() ? config.model.model_type : state.model_type;
  const auto network = model::make_pose_model(*backend, model_type,
                                              model::ModelSpec{state.backbone, state.num_keypoints, state.downsample_factor});
  model::PoseModel& net = *network;
  train::load_model(checkpoint, net.store(), stream);
  train::StepRunner runner(*backend, stream, net, compute::heatmap_mse_loss());

  // A batch larger than the data set would only allocate more.
  data::Loader loader(dataset, predict_loader_options(config, model_type, dataset.size(), *backend));
  std::vector<data::SampleRow> rows(static_cast<std::size_t>(dataset.size()));
  for (std::int64_t i = 0; i < dataset.size(); ++i) rows[std::size_t(i)].frame = i;
  loader.start_epoch(0, rows);
  const auto sets = data::set_names(run.split, dataset.size());

  const int k = dataset.num_keypoints();
  std::ostringstream csv;
  csv << "scorer";
  for (int j = 0; j < 3 * k; ++j) csv << ",trainer";
  csv << ",set\nbodyparts";
  for (const auto& name : dataset.keypoint_names()) csv << "," << csv_field(name) << "," << csv_field(name) << "," << csv_field(name);
  csv << ",\ncoords";
  for (int j = 0; j < k; ++j) csv << ",x,y,likelihood";
  csv << ",\n";
  train::Predictions p;
  std::int64_t done = 0;
  while (const data::Batch* batch = loader.next()) {
    runner.predict(*batch, p);
    for (int i = 0; i < batch->size; ++i) {
      const std::int64_t frame = batch->frame_index[std::size_t(i)];
      csv << csv_field(dataset.frame_path(frame));
      char cell[96];
      for (int j = 0; j < k; ++j) {
        const std::size_t at = std::size_t(i) * k + j;
        std::snprintf(cell, sizeof cell, ",%.4f,%.4f,%.6f", p.coords[2 * at], p.coords[2 * at + 1], p.confidence[at]);
        csv << cell;
      }
      csv << "," << sets[std::size_t(frame)] << "\n";
      ++done;
    }
  }
  write_file_atomically(out, csv.str());
  log.info("predicted " + std::to_string(done) + " frames with " + checkpoint + " -> " + out);
  return 0;
}

}  // namespace trainer::app
