#pragma once
// What `train` and `predict` open before the model exists: the dataset (the
// configured files, or the synthetic demo data generated on first use) and its
// train/val/test split.
#include <memory>  // std::unique_ptr
#include <string>  // std::string
#include <vector>  // std::vector

#include "config/config.hpp"        // Config
#include "data/dataset.hpp"      // data::Dataset
#include "data/split.hpp"        // data::Split
#include "runtime/run_plan.hpp"  // runtime::RunPlan
#include "runtime/world.hpp"     // runtime::World
#include "util/log.hpp"          // Log

namespace trainer::app {

struct RunData {
  std::vector<std::string> files;
  std::string imported;  // data.csv_file's cached HDF5 (absolute), or empty when data_files were used
  std::unique_ptr<data::Dataset> dataset;
  data::Split split;
};

// Collective: with data.csv_file (lightning-pose's data_dir + csv_file), rank 0
// imports the CSV project into `import_dir`/<csv name>-<hash>.h5 unless that file
// exists (the hash covers the CSV's bytes and the data_dir, so a changed CSV is
// imported anew); with no data_files either, rank 0 writes the synthetic demo data
// set (data.synthetic_file) if it does not exist yet. Every rank learns rank 0's
// outcome (no rank waits on a failed one), then opens the data.
RunData open_run_data(const Config& config, const runtime::World& world, const Log& log,
                      const std::string& import_dir);

// Where a training run caches its import: `imported/` beside the run folder, so the
// runs of one folder share it (outputs/<date>/<time> -> outputs/<date>/imported).
std::string import_dir_beside(const std::string& run_dir);

// Every rank, before any work: a train batch larger than the train split (or, with
// drop_last, than a rank's share of it) is a UserError instead of a run of no steps.
void check_train_batch_fits(const Config& config, const runtime::RunPlan& plan, const RunData& run,
                            const runtime::World& world);

}  // namespace trainer::app
