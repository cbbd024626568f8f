#pragma once
// `trainer predict RUN_DIR INPUT... [options]`, the way `litpose predict MODEL_DIR
// INPUT...` is called: RUN_DIR is a run folder of `trainer train` or a lightning-pose
// model directory (app/lp_model_import.hpp), each INPUT a video, a folder of videos,
// or a label CSV. The call is translated into the explicit
// form (`--checkpoint`, `--video`, `--overrides data.csv_file=...`), with
// lightning-pose's output layout: RUN_DIR/video_preds/ for videos and
// RUN_DIR/image_preds/<csv name>/predictions.csv for label CSVs.
#include <string>  // std::string
#include <vector>  // std::vector

namespace trainer::app {

using Args = std::vector<std::string>;

// Whether `args` (after `predict`) start with a folder rather than an option or a
// YAML config: the litpose form.
bool is_run_dir_form(const Args& args);

// One explicit predict invocation. `check_only`: every input was predicted before and
// is skipped, and this call only checks the caller's options (an unknown or wrong one
// is still an error, as when something is predicted).
struct PredictCall {
  Args args;
  bool check_only = false;
};

// The explicit predict invocations that the litpose form stands for (all videos in
// one, then the label CSVs, one each), each with the caller's options after the
// inputs. UserError (exit 2) for a folder without checkpoints, an input that does not exist or is neither a CSV nor a video or folder
// of videos, and options that name the checkpoint or the inputs a second time.
std::vector<PredictCall> explicit_predict_calls(const Args& args);

// The predictions CSV for data other than the run's own when --out is not given:
// RUN_DIR/image_preds/<name of the label CSV or data file>/predictions.csv, as
// lightning-pose's Model.image_preds_dir() lays it out.
std::string image_preds_csv(const std::string& run_dir, const std::string& data_name);

}  // namespace trainer::app
