// Predictions over the labelled frames (see predict_labeled.hpp).
#include "app/predict_labeled.hpp"

#include <cmath>    // std::sqrt, std::isnan
#include <cstdio>   // std::snprintf
#include <sstream>  // std::ostringstream
#include <vector>   // std::vector

#include "app/make_backend.hpp"     // make_predict_backend
#include "app/pca_error_files.hpp"  // fit_pca_error_metrics, pca_error_csv, metric_error_path
#include "app/prediction_recording.hpp"  // enable_prediction_recording, report_prediction_recording
#include "app/run_data.hpp"         // open_run_data
#include "app/run_options.hpp"      // predict_loader_options, resolve_csv_file
#include "util/name_list.hpp"        // join_names: the keypoints of a mismatch
#include "compute/backend.hpp"      // compute::Backend
#include "compute/losses/heatmap_mse.hpp"  // compute::heatmap_mse_loss (the runner needs one; predict computes none)
#include "data/label_csv.hpp"       // data::parse_label_csv: the keypoints, before the import
#include "data/loader.hpp"          // data::Loader
#include "data/split.hpp"           // data::set_names
#include "model/make_model.hpp"     // model::make_pose_model
#include "runtime/world.hpp"        // runtime::World
#include "train/checkpoint.hpp"     // load_training_state, load_model
#include "train/step.hpp"           // train::StepRunner
#include "util/atomic_write.hpp"    // write_file_atomically
#include "util/error.hpp"           // UserError
#include "util/csv_field.hpp"        // csv_field

namespace trainer::app {
namespace {

// lightning-pose's names of the split's sets.
std::string lightning_pose_set(const std::string& ours) { return ours == "val" ? "validation" : ours; }

std::string pixel_error_path(const std::string& predictions_csv) { return metric_error_path(predictions_csv, "pixel"); }

// Labels of other keypoints than the checkpoint predicts are the user's to fix.
void require_same_keypoint_count(const std::string& checkpoint, int predicted, const Config& config,
                                 const std::vector<std::string>& labelled) {
  if (static_cast<std::size_t>(predicted) == labelled.size()) return;
  const auto& trained = config.data.keypoint_names;  // the run's, when its configuration names them
  throw UserError("checkpoint '" + checkpoint + "' predicts " + std::to_string(predicted) + " keypoints" +
                      (trained.empty() ? std::string() : " (" + join_names(trained) + ")") + " but the data has " +
                      std::to_string(labelled.size()) + " (" + join_names(labelled) + ")",
                  "predict labels of the keypoints this model was trained on; a model for these keypoints is "
                  "trained on them");
}

}  // namespace

std::string lightning_pose_scorer(const std::string& model_type) { return model_type + "_tracker"; }

long predict_labeled_frames(const Config& config, const std::string& checkpoint, const LabeledPredictions& request,
                            const Log& log) {
  const train::TrainingState state = train::load_training_state(checkpoint);
  // A label CSV's header names its keypoints: checked before its images are imported,
  // which can take minutes. A CSV that does not parse is left to the import's message.
  if (!config.data.csv_file.empty()) {
    std::vector<std::string> labelled;
    bool parsed = false;
    try {
      labelled = data::parse_label_csv(resolve_csv_file(config.data)).keypoint_names;
      parsed = true;
    } catch (const std::exception&) {
    }
    if (parsed) require_same_keypoint_count(checkpoint, state.num_keypoints, config, labelled);
  }
  runtime::World world;  // one process: predictions need no ranks
  RunData run = open_run_data(config, world, log, request.import_dir);
  const data::Dataset& dataset = *run.dataset;
  require_same_keypoint_count(checkpoint, state.num_keypoints, config, dataset.keypoint_names());
  auto backend = make_predict_backend(config, log, request.precision);
  auto& stream = backend->default_stream();
  // The checkpoint knows its model type (older checkpoints: the configuration's).
  const std::string& model_type = state.model_type.empty() ? config.model.model_type : state.model_type;
  const auto network = model::make_pose_model(*backend, model_type,
                                              checkpoint_model_spec(state, config));
  model::PoseModel& net = *network;
  train::load_model(checkpoint, net.store(), stream);
  train::StepRunner runner(*backend, stream, net, compute::heatmap_mse_loss());
  enable_prediction_recording(config, *backend, runner, log);
  // A batch larger than the data set would only allocate more.
  data::Loader loader(dataset, predict_loader_options(config, model_type, dataset.size(), *backend));
  std::vector<data::SampleRow> rows(static_cast<std::size_t>(dataset.size()));
  for (std::int64_t i = 0; i < dataset.size(); ++i) rows[std::size_t(i)].frame = i;
  loader.start_epoch(0, rows);
  const auto sets = data::set_names(run.split, dataset.size());

  const int k = dataset.num_keypoints();
  const std::string scorer = lightning_pose_scorer(model_type);
  std::ostringstream csv, errors;
  csv << "scorer";
  for (int j = 0; j < 3 * k; ++j) csv << "," << scorer;
  csv << (request.with_sets ? ",set" : "") << "\nbodyparts";
  for (const auto& name : dataset.keypoint_names()) csv << "," << csv_field(name) << "," << csv_field(name) << "," << csv_field(name);
  csv << (request.with_sets ? "," : "") << "\ncoords";
  for (int j = 0; j < k; ++j) csv << ",x,y,likelihood";
  csv << (request.with_sets ? "," : "") << "\n";
  // metrics.py: one header row of keypoint names, the frame as index.
  for (const auto& name : dataset.keypoint_names()) errors << "," << csv_field(name);
  errors << (request.with_sets ? ",set" : "") << "\n";

  // For the PCA error files: every frame's predicted keypoints, and the fit on the
  // training split's labels (stored-frame pixels, as the predictions).
  std::vector<float> predicted(static_cast<std::size_t>(dataset.size()) * k * 2, std::nanf(""));
  const std::vector<PcaErrorFit> pca_fits =
      fit_pca_error_metrics(config, training_labels(dataset, run.split), k, log);

  train::Predictions p;
  long done = 0;
  while (const data::Batch* batch = loader.next()) {
    runner.predict(*batch, p);
    for (int i = 0; i < batch->size; ++i) {
      const std::int64_t frame = batch->frame_index[std::size_t(i)];
      const float fx = batch->scale_x.empty() ? 1.f : batch->scale_x[std::size_t(i)];
      const float fy = batch->scale_y.empty() ? 1.f : batch->scale_y[std::size_t(i)];
      csv << csv_field(dataset.frame_path(frame));
      errors << csv_field(dataset.frame_path(frame));
      char cell[96];
      for (int j = 0; j < k; ++j) {
        const std::size_t at = std::size_t(i) * k + j;
        std::snprintf(cell, sizeof cell, ",%.4f,%.4f,%.6f", p.coords[2 * at], p.coords[2 * at + 1], p.confidence[at]);
        csv << cell;
        predicted[(std::size_t(frame) * k + j) * 2] = p.coords[2 * at];
        predicted[(std::size_t(frame) * k + j) * 2 + 1] = p.coords[2 * at + 1];
        // The label, in stored-frame pixels like the prediction (the batch holds it
        // in network-input pixels); missing labels leave the cell empty (NaN in pandas).
        const float tx = batch->keypoints[2 * at], ty = batch->keypoints[2 * at + 1];
        const bool missing = (!batch->missing.empty() && batch->missing[at]) || std::isnan(tx) || std::isnan(ty);
        if (missing) {
          errors << ",";
        } else {
          const double dx = double(p.coords[2 * at]) - double(tx) * fx;
          const double dy = double(p.coords[2 * at + 1]) - double(ty) * fy;
          std::snprintf(cell, sizeof cell, ",%.4f", std::sqrt(dx * dx + dy * dy));
          errors << cell;
        }
      }
      if (request.with_sets) {
        const std::string set = lightning_pose_set(sets[std::size_t(frame)]);
        csv << "," << set;
        errors << "," << set;
      }
      csv << "\n";
      errors << "\n";
      ++done;
    }
  }
  write_file_atomically(request.predictions_csv, csv.str());
  write_file_atomically(pixel_error_path(request.predictions_csv), errors.str());
  std::string written = pixel_error_path(request.predictions_csv);
  if (!pca_fits.empty()) {
    std::vector<std::string> index, set_column;
    for (std::int64_t i = 0; i < dataset.size(); ++i) {
      index.push_back(dataset.frame_path(i));
      if (request.with_sets) set_column.push_back(lightning_pose_set(sets[std::size_t(i)]));
    }
    for (const auto& fit : pca_fits) {
      const std::string path = metric_error_path(request.predictions_csv, fit.name);
      write_file_atomically(path, pca_error_csv(fit.pca, dataset.keypoint_names(), index, predicted, set_column));
      written += ", " + path;
    }
  }
  report_prediction_recording(runner, log);
  log.info("predicted " + std::to_string(done) + " frames with " + checkpoint + " -> " + request.predictions_csv +
           " and " + written);
  return done;
}

}  // namespace trainer::app
