// `trainer predict --video`: keypoints for every frame of videos (see predict_video.hpp).
//
// Output, as lightning-pose writes it (predict.py / api/model.py):
//   video_preds/<stem>.csv                 scorer / bodyparts / coords header, one row per
//                                          frame: frame number, then x, y, likelihood per keypoint
//   video_preds/<stem>_temporal_norm.csv   per keypoint |p(t) - p(t-1)| in pixels, computed
//                                          from the CSV's values; empty for frame 0
#include "app/predict_video.hpp"

#include "app/predict_labeled.hpp"  // lightning_pose_scorer

#include <algorithm>   // std::max, std::min
#include <chrono>      // steady_clock
#include <cmath>       // std::sqrt, std::isnan
#include <cstdio>      // std::snprintf
#include <cstdlib>     // std::strtod
#include <cstring>     // std::strchr
#include <filesystem>  // create_directories, path
#include <sstream>     // std::ostringstream, std::istringstream
#include <thread>      // std::thread::hardware_concurrency

#include "app/make_backend.hpp"     // make_backend, BackendRequest
#include "app/loader_source.hpp"    // batch_allocator
#include "app/output_files.hpp"     // run_dir_of_checkpoint, remove_stale_temp_files_in
#include "app/pca_error_files.hpp"  // fit_pca_error_metrics, pca_error_csv
#include "app/prediction_recording.hpp"  // enable_prediction_recording, report_prediction_recording
#include "app/run_data.hpp"         // open_run_data
#include "app/run_options.hpp"      // checkpoint_model_spec
#include "compute/backend.hpp"      // compute::Backend
#include "compute/losses/heatmap_mse.hpp"  // the runner needs a loss; prediction computes none
#include "data/labeled_video.hpp"   // data::write_labeled_video
#include "data/video_batches.hpp"   // data::VideoBatches
#include "data/video_reader.hpp"    // data::list_videos, data::VideoReader
#include "model/make_model.hpp"     // model::make_pose_model, needs_context_frames
#include "runtime/agreed_failure.hpp"  // runtime::on_every_rank_or_none
#include "runtime/broadcast_string.hpp" // runtime::broadcast_string
#include "runtime/gather_text.hpp"  // runtime::gather_text
#include "runtime/batch_plan.hpp"   // runtime::workers_per_rank
#include "runtime/mpi_session.hpp"  // runtime::MpiSession
#include "runtime/visible_gpus.hpp" // runtime::visible_gpu_count
#include "train/checkpoint.hpp"     // load_training_state, load_model
#include "train/step.hpp"           // train::StepRunner
#include "util/atomic_write.hpp"    // write_file_atomically
#include "util/env.hpp"             // capture_environment
#include "util/error.hpp"           // UserError
#include "util/csv_field.hpp"        // csv_field

namespace trainer::app {

namespace {

std::string predictions_header(const std::vector<std::string>& names, const std::string& scorer) {
  std::string out = "scorer";
  for (std::size_t j = 0; j < 3 * names.size(); ++j) out += "," + scorer;
  out += "\nbodyparts";
  for (const auto& name : names) out += "," + csv_field(name) + "," + csv_field(name) + "," + csv_field(name);
  out += "\ncoords";
  for (std::size_t j = 0; j < names.size(); ++j) out += ",x,y,likelihood";
  return out + "\n";
}

// The CSV rows as numbers: [frames, K, 3] (x, y, likelihood) as written, which is
// what lightning-pose's metrics and labeled videos read back.
std::vector<float> parse_rows(const std::string& rows, std::size_t k) {
  std::vector<float> out;
  const char* p = rows.c_str();
  while (*p) {
    const char* comma = std::strchr(p, ',');
    for (std::size_t c = 0; c < 3 * k && comma; ++c) {
      char* end = nullptr;
      out.push_back(std::strtof(comma + 1, &end));
      comma = (*end == ',') ? end : nullptr;
    }
    const char* eol = std::strchr(p, '\n');
    if (!eol) break;
    p = eol + 1;
  }
  return out;
}

// lightning-pose's metrics.temporal_norm: the norm of the (x, y) step from the
// previous frame, per keypoint; frame 0 has none (NaN, written empty by pandas).
std::string temporal_norm_csv(const std::vector<std::string>& names, const std::vector<float>& xyl) {
  std::ostringstream out;
  for (const auto& name : names) out << "," << csv_field(name);
  out << "\n";
  const std::size_t k = names.size();
  const std::size_t frames = k ? xyl.size() / (3 * k) : 0;
  char cell[64];
  for (std::size_t t = 0; t < frames; ++t) {
    out << t;
    for (std::size_t j = 0; j < k; ++j) {
      if (t == 0) {
        out << ",";
        continue;
      }
      const float* a = &xyl[(t * k + j) * 3];
      const float* b = &xyl[((t - 1) * k + j) * 3];
      const double dx = double(a[0]) - b[0], dy = double(a[1]) - b[1];
      std::snprintf(cell, sizeof cell, ",%.6g", std::sqrt(dx * dx + dy * dy));
      out << cell;
    }
    out << "\n";
  }
  return out.str();
}

std::string video_stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

struct Segment {
  std::size_t video = 0;
  long begin = 0, end = 0;
};

// The frames of all videos in order, cut into world.size contiguous ranges: this
// rank's pieces of them.
std::vector<Segment> segments_of_rank(const std::vector<long>& frames, int rank, int size) {
  long total = 0;
  for (long n : frames) total += n;
  const long lo = static_cast<long>(static_cast<long double>(total) * rank / size);
  const long hi = static_cast<long>(static_cast<long double>(total) * (rank + 1) / size);
  std::vector<Segment> out;
  long start = 0;
  for (std::size_t v = 0; v < frames.size(); ++v) {
    const long b = std::max(lo, start), e = std::min(hi, start + frames[v]);
    if (b < e) out.push_back({v, b - start, e - start});
    start += frames[v];
  }
  return out;
}

// Every video's real length (VideoReader::count_decodable_frames: the container's
// count can be too small), counted by the ranks in turn: this rank's share as
// "index count" lines. May throw (a truncated video); no collective inside.
std::string count_my_videos(const runtime::World& world, const std::vector<std::string>& videos) {
  std::string mine;
  for (std::size_t v = static_cast<std::size_t>(world.rank); v < videos.size(); v += static_cast<std::size_t>(world.size))
    mine += std::to_string(v) + " " + std::to_string(data::VideoReader(videos[v]).count_decodable_frames()) + "\n";
  return mine;
}

// The counts of every rank, gathered on rank 0 and broadcast (collectives only).
// Logs the videos whose container was wrong.
std::vector<long> share_counts(const runtime::World& world, const std::string& mine,
                               const std::vector<std::string>& videos, const std::vector<long>& announced,
                               const Log& log) {
  std::string all;
  for (const auto& part : runtime::gather_text(world, mine)) all += part;
  std::istringstream lines(runtime::broadcast_string(world, all));
  std::vector<long> frames = announced;
  std::size_t v = 0;
  long n = 0;
  while (lines >> v >> n)
    if (v < frames.size()) frames[v] = n;
  for (std::size_t i = 0; i < videos.size(); ++i)
    if (frames[i] != announced[i])
      log.info("video '" + videos[i] + "': its container announces " + std::to_string(announced[i]) + " frames, " +
               std::to_string(frames[i]) + " decode; all " + std::to_string(frames[i]) + " are predicted");
  return frames;
}

std::string seconds_text(double s) {
  char buf[32];
  if (s < 120) std::snprintf(buf, sizeof buf, "%.0f s", s);
  else std::snprintf(buf, sizeof buf, "%.0f min", s / 60);
  return buf;
}

// The PCA error files of one video (rank 0): the labels scaled to its frame size, the
// fits, and the errors of its rows' keypoints.
void write_pca_error_files(const Config& config, const VideoPredictRequest& request, const std::string& video,
                           const std::string& base, const std::vector<float>& xyl, const Log& log) {
  const std::size_t k = request.keypoint_names.size();
  const data::VideoInfo info = data::VideoReader(video).info();
  const double sx = double(info.width) / request.label_width, sy = double(info.height) / request.label_height;
  std::vector<float> labels(request.pca_labels.size());
  for (std::size_t i = 0; i < labels.size(); i += 2) {
    labels[i] = static_cast<float>(request.pca_labels[i] * sx);
    labels[i + 1] = static_cast<float>(request.pca_labels[i + 1] * sy);
  }
  const std::size_t frames = k ? xyl.size() / (3 * k) : 0;
  std::vector<float> xy(frames * k * 2);
  std::vector<std::string> index(frames);
  for (std::size_t f = 0; f < frames; ++f) {
    index[f] = std::to_string(f);
    for (std::size_t j = 0; j < k; ++j) {
      xy[(f * k + j) * 2] = xyl[(f * k + j) * 3];
      xy[(f * k + j) * 2 + 1] = xyl[(f * k + j) * 3 + 1];
    }
  }
  for (const auto& fit : fit_pca_error_metrics(config, labels, static_cast<int>(k), log))
    write_file_atomically(base + "_" + fit.name + "_error.csv",
                          pca_error_csv(fit.pca, request.keypoint_names, index, xy, {}));
}

// Decoding threads: training.num_workers when given. On a GPU, whose inference
// outruns one decoder several times over (ResNet-50 bf16 at 256x256: about 7,800
// frames/s on an H200, against about 1,000 a decoding thread for the example's 396x406
// H.264), as many as the training loader would get (the node's cores over its ranks,
// minus one, at most 8, at least 2). On the CPU, whose cores run the inference, 2.
int decoding_threads(const Config& config, bool gpu, const runtime::World& world) {
  if (config.training.num_workers > 0) return config.training.num_workers;
  if (!gpu) return 2;
  // The node's cores, as the training plan counts them (run_plan.cpp): an affinity
  // mask would be this rank's share already, divided again below.
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return std::max(2, runtime::workers_per_rank(-1, capture_environment(), cores, world.local_size, nullptr));
}

}  // namespace

void set_pca_labels(VideoPredictRequest& request, const data::Dataset& dataset, const data::Split& split) {
  request.pca_labels = training_labels(dataset, split);
  request.label_width = dataset.width();
  request.label_height = dataset.height();
}

void predict_videos(runtime::MpiSession& session, const Config& config, const VideoPredictRequest& request,
                    const Log& log) {
  const runtime::World& world = session.world();
  // Every rank checks every video (cheap: the container header), so a bad file
  // stops all ranks with the same message before any work.
  std::vector<std::string> videos;
  std::vector<long> frames;
  runtime::on_every_rank_or_none(session, [&] {
    for (const auto& input : request.inputs)
      for (auto& v : data::list_videos(input)) videos.push_back(std::move(v));
    for (const auto& v : videos) frames.push_back(data::VideoReader(v).info().frame_count);  // opens and checks it
    // Two videos with one stem would write one CSV.
    for (std::size_t i = 0; i < videos.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (video_stem(videos[i]) == video_stem(videos[j]))
          throw UserError("videos '" + videos[j] + "' and '" + videos[i] + "' would both write " +
                              request.out_dir + "/" + video_stem(videos[i]) + ".csv",
                          "predict them in two runs with different output folders");
    if (world.rank == 0) {
      std::error_code ec;
      std::filesystem::create_directories(request.out_dir, ec);
      if (ec) throw UserError("cannot create the video predictions folder '" + request.out_dir + "': " + ec.message());
      remove_stale_temp_files_in(request.out_dir, log);
      // What a killed labeled-video writer left (its temporary names follow the rule too).
      if (request.labeled_videos) remove_stale_temp_files_in(request.out_dir + "/labeled_videos", log);
    }
  });
  const std::string my_counts = runtime::on_every_rank_or_none(session, [&] { return count_my_videos(world, videos); });
  frames = share_counts(world, my_counts, videos, frames, log);

  const train::TrainingState state = train::load_training_state(request.checkpoint);
  if (static_cast<int>(request.keypoint_names.size()) != state.num_keypoints)
    throw UserError("checkpoint '" + request.checkpoint + "' predicts " + std::to_string(state.num_keypoints) +
                        " keypoints but " + std::to_string(request.keypoint_names.size()) + " keypoint names are known",
                    "use the configuration the model was trained with (--config <run>/config.ini)");
  BackendRequest backend_request;
  const std::string& accelerator = config.distributed.accelerator;
  const int gpus = runtime::visible_gpu_count();
  backend_request.gpu = accelerator == "gpu" || (accelerator == "auto" && gpus > 0);
  backend_request.device = gpus > 0 ? world.local_rank % gpus : 0;
  backend_request.precision = request.precision;
  backend_request.float32_matmul = config.model.float32_matmul_precision;
  backend_request.conv_algorithms = config.model.conv_algorithms;
  auto backend = runtime::on_every_rank_or_none(session, [&] { return make_backend(backend_request, log); });
  auto& stream = backend->default_stream();
  const std::string& model_type = state.model_type.empty() ? config.model.model_type : state.model_type;
  const auto network = model::make_pose_model(*backend, model_type,
                                              checkpoint_model_spec(state, config));
  train::load_model(request.checkpoint, network->store(), stream);
  train::StepRunner runner(*backend, stream, *network, compute::heatmap_mse_loss());
  enable_prediction_recording(config, *backend, runner, log);

  data::VideoBatchOptions options;
  options.context = model::needs_context_frames(model_type);
  // lightning-pose's dali.*.predict.sequence_length: a context model's L frames
  // predict the L - 4 that have their context (its key's minimum is 5).
  options.batch_size = options.context ? config.eval.context_video_sequence_length - 4
                                       : config.eval.video_sequence_length;
  options.height = config.data.image_resize_height;
  options.width = config.data.image_resize_width;
  options.num_workers = decoding_threads(config, backend_request.gpu, world);
  options.num_keypoints = state.num_keypoints;
  options.allocator = batch_allocator(*backend);

  const std::vector<Segment> mine = segments_of_rank(frames, world.rank, world.size);
  long my_frames = 0;
  for (const auto& s : mine) my_frames += s.end - s.begin;
  log.info("predicting " + std::to_string(videos.size()) + " video(s) with " + request.checkpoint + " on " +
           std::to_string(world.size) + " rank(s), " + (backend_request.gpu ? "GPU" : "CPU") + ", batch " +
           std::to_string(options.batch_size) + ", " + std::to_string(options.num_workers) + " decoding thread(s)" +
           (options.context ? ", 5 context frames" : "") + " -> " + request.out_dir);

  // Rows per video computed by this rank, in frame order.
  std::vector<std::string> rows(videos.size());
  const int k = state.num_keypoints;
  const auto start = std::chrono::steady_clock::now();
  auto last_report = start;
  long done = 0;
  long batches_seen = 0;
  runtime::on_every_rank_or_none(session, [&] {
    train::Predictions p;
    char cell[96];
    for (const Segment& seg : mine) {
      options.frame_count = frames[seg.video];
      data::VideoBatches batches(videos[seg.video], seg.begin, seg.end, options);
      std::string& out = rows[seg.video];
      while (const data::Batch* batch = batches.next()) {
        // No collective until every rank has predicted its share: a stopped peer is
        // found by its missing heartbeats instead (issue 26: the job used to end only
        // after this rank's whole share plus a timeout).
        session.watchdog().debug_stop_point("video batch #" + std::to_string(++batches_seen));
        session.watchdog().check_peers("predicting video frames");
        runner.predict(*batch, p);
        for (int i = 0; i < batch->size; ++i) {
          out += std::to_string(batch->frame_index[static_cast<std::size_t>(i)]);
          for (int j = 0; j < k; ++j) {
            const std::size_t at = static_cast<std::size_t>(i) * k + j;
            std::snprintf(cell, sizeof cell, ",%.4f,%.4f,%.6f", p.coords[2 * at], p.coords[2 * at + 1], p.confidence[at]);
            out += cell;
          }
          out += "\n";
        }
        done += batch->size;
        const auto now = std::chrono::steady_clock::now();
        if (now - last_report > std::chrono::seconds(2) || done == my_frames) {
          last_report = now;
          const double s = std::chrono::duration<double>(now - start).count();
          const double rate = s > 0 ? done / s : 0;
          log.info("  " + video_stem(videos[seg.video]) + ": " + std::to_string(done) + "/" + std::to_string(my_frames) +
                   " frames" + (world.size > 1 ? " (rank 0's share)" : "") + ", " + std::to_string(static_cast<long>(rate)) +
                   " frames/s, ETA " + seconds_text(rate > 0 ? (my_frames - done) / rate : 0));
        }
      }
    }
  });
  report_prediction_recording(runner, log);

  // Rank 0 stitches each video's rows (ranks hold consecutive ranges, in rank order).
  std::string failure;
  for (std::size_t v = 0; v < videos.size(); ++v) {
    const std::vector<std::string> parts = runtime::gather_text(world, rows[v]);
    rows[v].clear();
    if (world.rank != 0) continue;
    std::string body;
    for (const auto& part : parts) body += part;
    const std::string base = request.out_dir + "/" + video_stem(videos[v]);
    try {
      write_file_atomically(base + ".csv", predictions_header(request.keypoint_names, lightning_pose_scorer(model_type)) + body);
      const std::vector<float> xyl = parse_rows(body, request.keypoint_names.size());
      write_file_atomically(base + "_temporal_norm.csv", temporal_norm_csv(request.keypoint_names, xyl));
      if (!request.pca_labels.empty() && request.label_width > 0 && request.label_height > 0)
        write_pca_error_files(config, request, videos[v], base, xyl, log);
      if (request.labeled_videos) {
        data::LabeledVideoRequest labeled;
        labeled.video = videos[v];
        labeled.out = request.out_dir + "/labeled_videos/" + video_stem(videos[v]) + "_labeled.mp4";
        labeled.num_keypoints = k;
        labeled.xyl = xyl;
        labeled.confidence_threshold = config.eval.confidence_thresh_for_vid;
        labeled.colormap = config.eval.colormap;
        std::filesystem::create_directories(request.out_dir + "/labeled_videos");
        log.info("  writing " + labeled.out);
        data::write_labeled_video(labeled);
      }
    } catch (const std::exception& e) {
      if (failure.empty()) failure = e.what();
    }
  }
  runtime::on_every_rank_or_none(session, [&] {
    if (!failure.empty()) throw UserError(failure);
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  long total = 0;
  for (long n : frames) total += n;
  char rate[64];
  std::snprintf(rate, sizeof rate, "%.1f", s > 0 ? total / s : 0.0);
  log.info("predicted " + std::to_string(total) + " frames of " + std::to_string(videos.size()) + " video(s) in " +
           seconds_text(s) + " (" + rate + " frames/s) -> " + request.out_dir);
}

int run_predict_video(const CommandLine& cl, const Args& args, const std::string& config_note) {
  const Config& config = cl.config;
  VideoPredictRequest request;
  request.checkpoint = cl.own["checkpoint"].as<std::string>();
  request.inputs = cl.own["video"].as<std::vector<std::string>>();
  request.labeled_videos = cl.own.count("labeled-video") > 0 || config.eval.save_vids_after_training;
  request.precision = predict_precision(cl.own["precision"].as<std::string>());
  request.out_dir = cl.own.count("video-out") ? cl.own["video-out"].as<std::string>()
                                              : run_dir_of_checkpoint(request.checkpoint) + "/video_preds";
  Args spawn_args{"predict"};
  spawn_args.insert(spawn_args.end(), args.begin(), args.end());
  const Env env = capture_environment();
  runtime::MpiSession session(spawn_args, 1, env, config.distributed.collective_timeout);
  const Log log(session.world().rank);
  if (!config_note.empty()) log.info(config_note);
  // The keypoint names: the configuration's, else the data's (as `predict` finds them);
  // with PCA keypoints in the configuration the data's training labels too, for the
  // PCA error files.
  bool pca_files = !config.data.columns_for_singleview_pca.empty() || !config.data.mirrored_column_matches.empty();
  // A lightning-pose model folder's data folder is cleared unless the user gives it
  // (model_folder_overrides): its PCA error files need the labels, the keypoints not.
  const bool labels_known = !config.data.data_files.empty() || !config.data.data_dir.empty() ||
                            std::filesystem::path(config.data.csv_file).is_absolute();
  if (pca_files && !labels_known && !config.data.keypoint_names.empty()) {
    log.info("no PCA error files: they fit the PCA to the labelled frames, and data.data_dir is not given "
             "(--overrides data.data_dir=PROJECT_FOLDER writes them)");
    pca_files = false;
  }
  if (!config.data.keypoint_names.empty() && !pca_files) {
    request.keypoint_names = config.data.keypoint_names;
  } else {
    // A CSV to import is cached beside the run (or lightning-pose model) folder, as training does.
    const std::string import_dir = import_dir_beside(run_dir_of_checkpoint(request.checkpoint));
    const RunData run = runtime::on_every_rank_or_none(
        session, [&] { return open_run_data(config, session.world(), log, import_dir); });
    request.keypoint_names =
        config.data.keypoint_names.empty() ? run.dataset->keypoint_names() : config.data.keypoint_names;
    if (pca_files) set_pca_labels(request, *run.dataset, run.split);
  }
  predict_videos(session, config, request, log);
  return 0;
}

}  // namespace trainer::app
