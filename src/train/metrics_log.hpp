#pragma once
// metrics.csv in the output folder (rank 0 only): one row per epoch, rewritten
// atomically (temporary file + rename) after every epoch, so a crash leaves the
// previous complete file. A resumed run keeps the rows of the epochs it resumes after.
#include <string>  // std::string
#include <vector>  // std::vector

namespace trainer::train {

struct EpochMetrics {
  int epoch = 0;
  long step = 0;              // optimizer steps at the end of the epoch
  double train_loss = 0;      // mean over the epoch's steps
  double val_loss = -1;       // < 0: not validated this epoch (empty cell)
  double val_rmse = -1;       // pixels in the original frame
  double lr_head = 0, lr_backbone = 0;
  double images_per_s = 0;
  double elapsed_s = 0;
};

class MetricsLog {
 public:
  // Keeps existing rows with epoch < keep_before (resume), drops the rest.
  MetricsLog(std::string path, int keep_before);
  void append(const EpochMetrics& m);
  const std::string& path() const { return path_; }
  static const char* header();

 private:
  void write() const;
  std::string path_;
  std::vector<std::string> rows_;
};

}  // namespace trainer::train
