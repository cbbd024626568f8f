#pragma once
// metrics.csv in the output folder (rank 0 only), in the shape of Lightning's
// CSVLogger: one header, and two kinds of rows that leave each other's cells empty:
//   - a step row every log_every_n_steps: epoch, step, lr, images/s, elapsed, the
//     step's loss in `train_loss_step`, its `train_supervised_rmse`, and
//     semi-supervised its unsupervised terms, warm-up factor and `total_loss`;
//   - a validation row for each validation inside an epoch (training.val_check_interval):
//     epoch, step and the validation cells;
//   - an epoch row at each epoch's end: the epoch's mean `train_loss`, the validation
//     cells when it validated, lr, images/s, elapsed.
// So `df[df.train_loss.notna()]` are the epochs and `df[df.train_loss_step.notna()]`
// the steps. The file is rewritten atomically (temporary file + rename) at each epoch's
// end, so a crash leaves the previous complete file; a background thread writes it
// (util/background_file_writer.hpp), so the epoch does not wait for the fsync. A resumed run keeps the rows up
// to the step it resumes from and drops the rest, which it will log again.
#include <string>  // std::string
#include <vector>  // std::vector

#include "util/background_file_writer.hpp"  // BackgroundFileWriter

namespace trainer::train {

struct EpochMetrics {
  int epoch = 0;
  long step = 0;              // optimizer steps at the end of the epoch
  double train_loss = 0;      // mean over the epoch's steps
  double val_loss = -1;       // < 0: not validated this epoch (empty cell)
  double val_rmse = -1;       // lightning-pose's RMSE: per keypoint sqrt of the mean of dx^2 and dy^2,
                              // in pixels of the original frame (the pixel error over sqrt 2)
  double val_rmse_input = -1; // the same in network-input (resized) pixels: lightning-pose's val_supervised_rmse
  double lr_head = 0, lr_backbone = 0;
  double images_per_s = 0;
  double elapsed_s = 0;
  // Where the epoch's wall time went: its steps (data waits included), validation,
  // and everything else (loader restart, checkpoint snapshot, metrics, ...).
  double steps_s = 0, val_s = 0, overhead_s = 0;
  // Semi-supervised: the warm-up factor on the unsupervised weights this epoch
  // (< 0: supervised run, empty cells) and each term's mean unweighted loss with its
  // weight, e.g. {"pca_singleview", 3.2, 8.4e-6}.
  double unsupervised_importance = -1;
  struct Term {
    std::string name;
    double loss = 0, weight = 0;
  };
  std::vector<Term> unsupervised;
};

struct StepMetrics {
  int epoch = 0;
  long step = 0;              // optimizer steps done, this one included
  double loss = 0;            // this step's training loss, averaged over ranks
  double lr_head = 0, lr_backbone = 0;
  double images_per_s = 0;    // since the epoch started, all ranks
  double elapsed_s = 0;
  double rmse = -1;           // train_supervised_rmse (network-input pixels), averaged over ranks; < 0: none
  // Semi-supervised (importance < 0: supervised): the step's warm-up factor, each
  // term's unweighted loss with its weight (averaged over ranks), and lightning-pose's
  // total_loss = loss + importance x sum of weight x term.
  double unsupervised_importance = -1;
  std::vector<EpochMetrics::Term> unsupervised;
  double total_loss = 0;
};

// A validation inside an epoch (training.val_check_interval below the epoch): its own
// row, with the validation cells only; at an epoch's end they go into the epoch row.
struct ValidationMetrics {
  int epoch = 0;
  long step = 0;      // optimizer steps done when it ran
  double loss = 0;
  double rmse = 0;        // as EpochMetrics::val_rmse
  double rmse_input = 0;  // as EpochMetrics::val_rmse_input
};

// The mean Euclidean pixel error that lightning-pose users compare (its
// predictions_pixel_error.csv): each keypoint's RMSE over x and y is its Euclidean
// error divided by sqrt(2), so the means differ by exactly that factor.
inline double pixel_error_of_rmse(double rmse) { return rmse * 1.4142135623730951; }

class MetricsLog {
 public:
  // Keeps the existing rows of steps <= keep_through_step (resume), drops the rest.
  MetricsLog(std::string path, long keep_through_step);
  // Queues the file with the row for writing; throws an earlier write's error.
  void append(const EpochMetrics& m);
  void append(const StepMetrics& m);    // written with the next epoch row (or flush())
  void append(const ValidationMetrics& m);  // likewise
  // Writes every row and waits until the file is on disk; throws a write's error.
  void flush();
  const std::string& path() const { return file_.path(); }
  static const char* header();

 private:
  void write();
  std::vector<std::string> rows_;
  BackgroundFileWriter file_;
};

}  // namespace trainer::train
