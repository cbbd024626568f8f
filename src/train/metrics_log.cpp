// metrics.csv writer (see metrics_log.hpp).
#include "train/metrics_log.hpp"

#include <cstdio>   // std::snprintf
#include <fstream>  // std::ifstream
#include <sstream>  // std::ostringstream


namespace trainer::train {

const char* MetricsLog::header() {
  // New columns go at the end, so scripts that cut the first ones keep working.
  return "epoch,step,train_loss,val_loss,val_rmse_px,lr_head,lr_backbone,images_per_s,elapsed_s,train_loss_step,"
         "epoch_steps_s,epoch_val_s,epoch_overhead_s,val_pixel_error_px,total_unsupervised_importance,"
         "train_temporal_loss,train_pca_singleview_loss,train_pca_multiview_loss,val_supervised_rmse,"
         "train_supervised_rmse,total_loss";
}

namespace {
// The step of a row: its second cell; -1 when unreadable (such a row is dropped).
long row_step(const std::string& line) {
  const auto comma = line.find(',');
  if (comma == std::string::npos) return -1;
  try {
    return std::stol(line.substr(comma + 1));
  } catch (const std::exception&) {
    return -1;
  }
}

// "%.<digits>g" of `value`, or empty when `value` < 0 (not measured).
std::string cell_or_empty(double value, int digits = 8) {
  if (value < 0) return "";
  char cell[32];
  std::snprintf(cell, sizeof cell, "%.*g", digits, value);
  return cell;
}

// The unsupervised term columns (temporal, pca_singleview, pca_multiview: the header's
// order), each with a leading comma.
std::string term_cells(const std::vector<EpochMetrics::Term>& terms) {
  std::string cells;
  for (const char* name : {"temporal", "pca_singleview", "pca_multiview"}) {
    cells += ",";
    for (const auto& t : terms)
      if (t.name == name) cells += cell_or_empty(t.loss);
  }
  return cells;
}
}  // namespace

MetricsLog::MetricsLog(std::string path, long keep_through_step) : file_(std::move(path)) {
  std::ifstream in(file_.path());
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    if (first) {
      first = false;
      continue;  // header
    }
    if (line.empty()) continue;
    const long step = row_step(line);
    if (step >= 0 && step <= keep_through_step) rows_.push_back(line);
  }
}

void MetricsLog::append(const EpochMetrics& m) {
  char val_loss[32] = "", val_rmse[32] = "", val_pixel_error[32] = "";
  if (m.val_loss >= 0) std::snprintf(val_loss, sizeof val_loss, "%.8g", m.val_loss);
  if (m.val_rmse >= 0) std::snprintf(val_rmse, sizeof val_rmse, "%.6g", m.val_rmse);
  if (m.val_rmse >= 0) std::snprintf(val_pixel_error, sizeof val_pixel_error, "%.6g", pixel_error_of_rmse(m.val_rmse));
  char row[512];
  std::snprintf(row, sizeof row, "%d,%ld,%.8g,%s,%s,%.6g,%.6g,%.2f,%.2f,,%.6f,%.6f,%.6f,%s,%s", m.epoch, m.step,
                m.train_loss, val_loss, val_rmse, m.lr_head, m.lr_backbone, m.images_per_s, m.elapsed_s, m.steps_s,
                m.val_s, m.overhead_s, val_pixel_error, cell_or_empty(m.unsupervised_importance, 6).c_str());
  rows_.push_back(row + term_cells(m.unsupervised) + "," + cell_or_empty(m.val_rmse_input) + ",,");
  write();
}

void MetricsLog::append(const StepMetrics& m) {
  char row[512];
  std::snprintf(row, sizeof row, "%d,%ld,,,,%.6g,%.6g,%.2f,%.2f,%.8g,,,,,%s", m.epoch, m.step, m.lr_head,
                m.lr_backbone, m.images_per_s, m.elapsed_s, m.loss, cell_or_empty(m.unsupervised_importance, 6).c_str());
  const bool semi = m.unsupervised_importance >= 0;
  rows_.push_back(row + term_cells(m.unsupervised) + ",," + cell_or_empty(m.rmse) + "," +
                  (semi ? cell_or_empty(m.total_loss) : std::string()));
}

void MetricsLog::append(const ValidationMetrics& m) {
  char row[512];
  std::snprintf(row, sizeof row, "%d,%ld,,%.8g,%.6g,,,,,,,,,%.6g,,,,,%.8g,,", m.epoch, m.step, m.loss, m.rmse,
                pixel_error_of_rmse(m.rmse), m.rmse_input);
  rows_.push_back(row);
}

void MetricsLog::write() {
  std::ostringstream out;
  out << header() << "\n";
  for (const auto& r : rows_) out << r << "\n";
  file_.write(out.str());
}

void MetricsLog::flush() {
  write();
  file_.wait();
}

}  // namespace trainer::train
