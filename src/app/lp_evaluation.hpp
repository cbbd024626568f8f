#pragma once
// lightning-pose's evaluation after training (train.py, _evaluate_on_training_dataset),
// for a run trained from a label CSV (data.csv_file):
//   image_preds/<csv>/predictions*.csv           the training CSV's predictions (the
//                                                run's predictions*.csv, copied there)
//   image_preds/<csv>_new.csv/predictions*.csv   CollectedData_new.csv and
//   image_preds/<csv>_test.csv/predictions*.csv  CollectedData_test.csv beside the
//                                                training CSV, when present
//   predictions*_new.csv, predictions*_test.csv  their copies in the run folder, as
//                                                lightning-pose keeps for older tools
#include <string>  // std::string

#include "config/config.hpp"  // Config
#include "util/log.hpp"       // Log

namespace trainer::app {

// Rank 0, after the run's predictions.csv. `config` names the training CSV
// (data.csv_file, absolute or relative to data.data_dir); nothing happens without one.
void evaluate_label_csvs_after_training(const Config& config, const std::string& checkpoint,
                                        const std::string& run_dir, const Log& log);

}  // namespace trainer::app
