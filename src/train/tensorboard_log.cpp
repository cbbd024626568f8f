// lightning-pose's TensorBoard scalars (see tensorboard_log.hpp).
#include "train/tensorboard_log.hpp"

#include <algorithm>   // std::max
#include <chrono>      // std::chrono::system_clock
#include <filesystem>  // std::filesystem::directory_iterator

#include "compute/losses/heatmap_loss.hpp"  // compute::kHeatmapLossWeight

namespace trainer::train {
namespace {
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

std::string TensorBoardLog::version_folder(const std::string& run_dir, const std::string& model_name,
                                           bool continue_newest) {
  const std::filesystem::path root = std::filesystem::path(run_dir) / "tb_logs" / model_name;
  long highest = -1;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("version_", 0) != 0 || !it->is_directory()) continue;
    try {
      std::size_t used = 0;
      const long n = std::stol(name.substr(8), &used);
      if (used == name.size() - 8 && n > highest) highest = n;
    } catch (const std::exception&) {
    }
  }
  const long version = continue_newest ? std::max(highest, 0L) : highest + 1;
  return (root / ("version_" + std::to_string(version))).string();
}

TensorBoardLog::TensorBoardLog(const std::string& run_dir, TensorBoardNames names, long resume_step)
    : names_(std::move(names)), events_(version_folder(run_dir, names_.model_name, resume_step > 0)) {
  if (resume_step > 0) {
    events_.add_session_start(resume_step + 1, now_seconds());
    events_.flush();
  }
}

void TensorBoardLog::scalar(const std::string& tag, double value, long step) {
  events_.add_scalar(tag, float(value), step, now_seconds());
}

void TensorBoardLog::step(const StepMetrics& m) {
  const std::string& loss = names_.heatmap_loss;
  scalar("train_supervised_loss", m.loss, m.step);
  scalar("train_" + loss + "_loss", m.loss / compute::kHeatmapLossWeight, m.step);
  scalar("train_" + loss + "_loss_weighted", m.loss, m.step);
  scalar(loss + "_weight", compute::kHeatmapLossWeight, m.step);
  if (m.rmse >= 0) scalar("train_supervised_rmse", m.rmse, m.step);
  // Semi-supervised: what lightning-pose's SemiSupervisedTrackerMixin.training_step and
  // its unsupervised loss factory log at every logged step.
  if (m.unsupervised_importance >= 0) {
    scalar("total_unsupervised_importance", m.unsupervised_importance, m.step);
    for (const auto& t : m.unsupervised) {
      scalar("train_" + t.name + "_loss", t.loss, m.step);
      scalar("train_" + t.name + "_loss_weighted", t.loss * t.weight, m.step);
      scalar(t.name + "_weight", t.weight, m.step);
    }
    scalar("total_loss", m.total_loss, m.step);
  }
  scalar("epoch", m.epoch, m.step);
}

void TensorBoardLog::epoch_start(int epoch, long steps_done, double lr_head, double lr_backbone) {
  (void)epoch;
  // At the epoch's first step: Lightning's LearningRateMonitor uses the step before it,
  // which is also where the previous epoch's validation sits, so a run resumed there
  // could not replace the one without dropping the other.
  scalar("lr-" + names_.optimizer + "/backbone", lr_backbone, steps_done + 1);
  scalar("lr-" + names_.optimizer + "/head", lr_head, steps_done + 1);
}

void TensorBoardLog::validation(const ValidationMetrics& m) {
  const std::string& loss = names_.heatmap_loss;
  scalar("val_supervised_loss", m.loss, m.step);
  scalar("val_supervised_rmse", m.rmse_input, m.step);  // lightning-pose's: in resized pixels
  scalar("val_" + loss + "_loss", m.loss / compute::kHeatmapLossWeight, m.step);
  scalar("val_" + loss + "_loss_weighted", m.loss, m.step);
  scalar("epoch", m.epoch, m.step);
}

void TensorBoardLog::epoch_end(const EpochMetrics& m) {
  if (m.val_loss >= 0) validation(ValidationMetrics{m.epoch, m.step, m.val_loss, m.val_rmse, m.val_rmse_input});
  // The unsupervised terms go with the steps (step()), as lightning-pose logs them;
  // their epoch means are metrics.csv's.
  events_.flush();
}

}  // namespace trainer::train
