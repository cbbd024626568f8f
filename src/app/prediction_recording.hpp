#pragma once
// model.cuda_graphs for prediction (`trainer predict`, and the predictions after
// training): on a GPU, batches of one shape replay a recording of their forward and
// soft-argmax (train::StepRunner::predict), as training steps do. Each process
// predicts on its own, so any number of ranks records.
#include "config/config.hpp"  // Config
#include "util/log.hpp"       // Log

namespace trainer::compute {
class Backend;
}
namespace trainer::train {
class StepRunner;
}

namespace trainer::app {

// Turns recording on when model.cuda_graphs is true and `backend` is a GPU; CPUs
// ignore the key without a word.
void enable_prediction_recording(const Config& config, const compute::Backend& backend, train::StepRunner& runner,
                                 const Log& log);
// One line: how many of the predictions replayed a recording (nothing when none could).
void report_prediction_recording(const train::StepRunner& runner, const Log& log);

}  // namespace trainer::app
