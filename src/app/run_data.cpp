// The run's data set and split (see run_data.hpp).
#include "app/run_data.hpp"

#include <cstdint>     // std::uint64_t
#include <cstdio>      // std::snprintf
#include <filesystem>  // std::filesystem

#include "app/config_values.hpp"       // config_detail::format_real
#include "app/output_files.hpp"        // make_directories, remove_stale_temp_files_in
#include "app/run_options.hpp"         // resolve_csv_file
#include "data/sampler.hpp"            // data::samples_per_rank
#include "data/synth.hpp"              // data::ensure_synthetic_dataset
#include "runtime/broadcast_string.hpp"  // runtime::broadcast_string: rank 0's outcome
#include "util/atomic_write.hpp"       // folder_of
#include "util/error.hpp"              // UserError
#include "util/input_file.hpp"         // read_input_file
#include "data/import.hpp"             // data::import_project

namespace trainer::app {
namespace {

namespace fs = std::filesystem;

// FNV-1a: a stable 64-bit fingerprint (not a secret, only a cache key).
std::uint64_t fnv1a(const std::string& bytes, std::uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// Bumped when an import keeps more of a label file than before, so cached imports of
// an unchanged file are made again (2: lightning-pose's visible flags).
constexpr const char* kImportRevision = "import 2";

// Rank 0: imports data_dir/csv_file into the cache unless it is there; returns its path.
std::string import_csv_project(const Config& config, const std::string& import_dir, const Log& log) {
  const fs::path dir = fs::absolute(config.data.data_dir.empty() ? fs::path(".") : fs::path(config.data.data_dir));
  const fs::path csv_path = fs::path(config.data.csv_file);
  const fs::path csv = resolve_csv_file(config.data);
  const std::string bytes = read_input_file(
      csv.string(),
      "cannot read data.csv_file " + csv.string() +
          (csv_path.is_absolute() ? std::string() : " (data.csv_file is relative to data.data_dir)"),
      std::size_t{1} << 30, "set data.data_dir to the project folder and data.csv_file to its label CSV");
  // The key also names what an import keeps of the file: imports made before the
  // `visible` column was stored (/visibility) hold no flags and must not be reused.
  const std::uint64_t key =
      fnv1a(std::string(kImportRevision) + "\n" + dir.lexically_normal().string() + "\n", fnv1a(bytes));
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(key));
  const std::string out = (fs::absolute(import_dir) / (csv.stem().string() + "-" + hex + ".h5")).string();
  if (fs::exists(out)) {
    log.info("data: " + csv.string() + " (imported before: " + out + ")");
    return out;
  }
  make_directories(fs::path(out).parent_path().string());
  remove_stale_temp_files_in(folder_of(out), log);
  data::ImportOptions options;
  options.csv = csv.string();
  options.out = out;
  // lightning-pose: image paths are relative to data_dir. Without one, `trainer import`'s
  // rule: the CSV's folder (a DeepLabCut project's labeled-data/<video>/ CSV: the project).
  if (!config.data.data_dir.empty()) options.root = dir.string();
  options.keypoint_names = config.data.keypoint_names;  // for a pandas .h5 label file
  data::ImportSummary s;
  try {
    s = data::import_project(options);
  } catch (const UserError& e) {
    // import's hints speak of its --root option; here the folder is data.data_dir.
    if (e.hint().find("--root") == std::string::npos) throw;
    throw UserError(e.what(), config.data.data_dir.empty()
                                  ? "image paths in the CSV are relative to data.data_dir (not set: the CSV's folder)"
                                  : "image paths in the CSV are relative to data.data_dir (" + dir.string() + ")");
  }
  log.info("data: imported " + std::to_string(s.frames) + " frames (" + std::to_string(s.height) + "x" +
           std::to_string(s.width) + ", " + std::to_string(s.keypoints) + " keypoints" +
           (s.visibility ? ", lightning-pose's visible flags" : "") + ") from " + csv.string() + " into " + out);
  return out;
}

}  // namespace

std::string import_dir_beside(const std::string& run_dir) {
  const fs::path run = fs::path(run_dir).lexically_normal();
  const fs::path parent = (run.has_filename() ? run : run.parent_path()).parent_path();
  return ((parent.empty() ? fs::path(".") : parent) / "imported").string();
}

RunData open_run_data(const Config& config, const runtime::World& world, const Log& log,
                      const std::string& import_dir) {
  RunData run;
  if (!config.data.csv_file.empty()) {
    // Rank 0's outcome for all: "ok:<path>", or the error and its hint split by \x1f.
    std::string outcome;
    if (world.rank == 0) {
      try {
        outcome = "ok:" + import_csv_project(config, import_dir, log);
      } catch (const UserError& e) {
        outcome = std::string(e.what()) + '\x1f' + e.hint();
      } catch (const std::exception& e) {
        outcome = std::string(e.what()) + '\x1f';
      }
    }
    outcome = runtime::broadcast_string(world, outcome);
    if (outcome.rfind("ok:", 0) != 0) {
      const std::size_t split = outcome.find('\x1f');
      const std::string hint = split == std::string::npos ? "" : outcome.substr(split + 1);
      throw UserError("data.csv_file: " + outcome.substr(0, split),
                      hint.empty() ? "check data.data_dir and data.csv_file (docs/DATA.md: the CSV format)" : hint);
    }
    run.imported = outcome.substr(3);
    run.files = {run.imported};
  } else if (config.data.data_files.empty()) {
    const std::string path = config.data.synthetic_file;
    std::string error;
    if (world.rank == 0) {
      try {
        data::SynthOptions options;
        options.keypoints = config.data.num_keypoints > 0 ? config.data.num_keypoints : options.keypoints;
        options.seed = config.training.rng_seed_data_pt;
        const auto slash = path.rfind('/');
        if (slash != std::string::npos) make_directories(path.substr(0, slash));
        remove_stale_temp_files_in(folder_of(path), log);
        if (data::ensure_synthetic_dataset(path, options))
          log.info("generated the synthetic demo data set " + path + " (" + std::to_string(options.frames) +
                   " frames, " + std::to_string(options.size) + "x" + std::to_string(options.size) + ")");
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    // Every rank learns whether rank 0 succeeded, so none waits forever.
    error = runtime::broadcast_string(world, error);
    if (!error.empty()) throw UserError("could not create the synthetic data set: " + error);
    run.files = {path};
  } else {
    run.files = data::expand_data_files(config.data.data_files);
  }
  data::DatasetExpectations expect;
  expect.num_keypoints = config.data.num_keypoints;
  expect.keypoint_names = config.data.keypoint_names;
  run.dataset = std::make_unique<data::Dataset>(data::Dataset::open(run.files, expect));
  const auto sizes = data::split_sizes_from_probabilities(run.dataset->size(), config.training.train_prob,
                                                          config.training.val_prob);
  run.split = data::make_split(run.dataset->size(), sizes, config.training.rng_seed_data_pt);
  const std::int64_t keep = data::train_frames_to_use(static_cast<std::int64_t>(run.split.train.size()),
                                                      config.training.train_frames);
  if (keep < static_cast<std::int64_t>(run.split.train.size())) {
    run.split.train.resize(static_cast<std::size_t>(keep));
    log.info("data: training.train_frames = " + config_detail::format_real(config.training.train_frames) + ": " +
             std::to_string(keep) + " of the train frames are used, the rest are unused");
  }
  return run;
}

void check_train_batch_fits(const Config& config, const runtime::RunPlan& plan, const RunData& run,
                            const runtime::World& world) {
  const auto frames = static_cast<std::int64_t>(run.split.train.size());
  data::check_batch_fits("train", frames, config.training.train_batch_size, config.training.drop_last, run.files[0]);
  // With drop_last each rank keeps floor(frames / ranks) rows: fewer than its batch is no step at all.
  const std::int64_t per_rank = data::samples_per_rank(frames, world.size, config.training.drop_last);
  if (config.training.drop_last && per_rank < plan.rank.train_batch_size)
    throw UserError("the train split of " + run.files[0] + " (" + std::to_string(frames) + " frames) gives each of " +
                        std::to_string(world.size) + " ranks " + std::to_string(per_rank) +
                        " frames, fewer than its batch of " + std::to_string(plan.rank.train_batch_size) +
                        ": with drop_last there would be no batch at all",
                    "lower training.train_batch_size, set drop_last = false, or label more frames");
}

}  // namespace trainer::app
