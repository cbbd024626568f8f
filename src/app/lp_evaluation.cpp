// lightning-pose's evaluation after training (see lp_evaluation.hpp).
#include "app/lp_evaluation.hpp"

#include <filesystem>  // std::filesystem::path, directory_iterator
#include <fstream>     // std::ifstream
#include <sstream>     // std::stringstream
#include <vector>      // std::vector

#include "app/output_files.hpp"     // make_directories
#include "app/predict_inputs.hpp"   // image_preds_csv
#include "app/predict_labeled.hpp"  // predict_labeled_frames
#include "app/run_data.hpp"         // import_dir_beside
#include "util/atomic_write.hpp"    // write_file_atomically
#include "util/error.hpp"           // UserError

namespace trainer::app {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("cannot read '" + path.string() + "'");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The `predictions*.csv` files of `folder` (predictions.csv, predictions_pixel_error.csv, ...).
std::vector<fs::path> prediction_files(const fs::path& folder) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("predictions", 0) == 0 && it->path().extension() == ".csv") out.push_back(it->path());
  }
  return out;
}

}  // namespace

void evaluate_label_csvs_after_training(const Config& config, const std::string& checkpoint,
                                        const std::string& run_dir, const Log& log) {
  if (config.data.csv_file.empty()) return;
  fs::path csv(config.data.csv_file);
  if (csv.is_relative() && !config.data.data_dir.empty()) csv = fs::path(config.data.data_dir) / csv;

  // The training CSV's predictions where lightning-pose's tools look first.
  const fs::path main_folder = fs::path(image_preds_csv(run_dir, csv.string())).parent_path();
  make_directories(main_folder.string());
  for (const auto& file : prediction_files(run_dir)) {
    const std::string stem = file.stem().string();
    const auto ends_with = [&](const std::string& tail) {
      return stem.size() > tail.size() && stem.compare(stem.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (ends_with("_new") || ends_with("_test")) continue;  // the other CSVs' copies
    write_file_atomically((main_folder / file.filename()).string(), read_file(file));
  }

  for (const char* suffix : {"_new", "_test"}) {
    const fs::path extra = csv.parent_path() / (csv.stem().string() + suffix + csv.extension().string());
    std::error_code ec;
    if (!fs::is_regular_file(extra, ec)) continue;  // as lightning-pose: skipped silently when absent
    Config c = config;
    c.data.csv_file = extra.string();
    c.data.data_files.clear();
    LabeledPredictions request;
    request.predictions_csv = image_preds_csv(run_dir, extra.string());
    request.with_sets = false;
    request.import_dir = import_dir_beside(run_dir);
    make_directories(fs::path(request.predictions_csv).parent_path().string());
    const long frames = predict_labeled_frames(c, checkpoint, request, Log(0, true));
    // Older tools read them in the run folder: predictions_new.csv, predictions_pixel_error_new.csv, ...
    for (const auto& file : prediction_files(fs::path(request.predictions_csv).parent_path()))
      write_file_atomically((fs::path(run_dir) / (file.stem().string() + suffix + ".csv")).string(), read_file(file));
    log.info("predictions of " + extra.string() + " (" + std::to_string(frames) + " frames): " +
             request.predictions_csv + ", and predictions*" + suffix + ".csv in " + run_dir);
  }
}

}  // namespace trainer::app
