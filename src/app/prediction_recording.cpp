#include "app/prediction_recording.hpp"

#include <string>  // std::string, std::to_string

#include "compute/backend.hpp"  // compute::Backend, DeviceKind
#include "train/step.hpp"       // train::StepRunner

namespace trainer::app {

void enable_prediction_recording(const Config& config, const compute::Backend& backend, train::StepRunner& runner,
                                 const Log& log) {
  if (!config.model.cuda_graphs || backend.kind() != compute::DeviceKind::cuda) return;
  runner.record_steps([&log](const std::string& line) { log.warn(line); });
}

void report_prediction_recording(const train::StepRunner& runner, const Log& log) {
  const auto& c = runner.recording_counts();
  if (c.predictions == 0) return;
  log.info("model.cuda_graphs: " + std::to_string(c.predictions_replayed) + " of " + std::to_string(c.predictions) +
           " prediction batches replayed a recording (each batch shape's first batch runs op by op and its "
           "next ones record, one per staging slot; false runs them all op by op)");
}

}  // namespace trainer::app
