// Run folder helpers shared by train and predict (app/output_files.hpp).
#include <catch2/catch.hpp>  // TEST_CASE, CHECK

#include "app/output_files.hpp"  // run_dir_of_checkpoint, timestamped_output_dir

using trainer::app::run_dir_of_checkpoint;

TEST_CASE("a checkpoint's run folder", "[app][output_files]") {
  CHECK(run_dir_of_checkpoint("outputs/run/checkpoints/last.h5") == "outputs/run");
  CHECK(run_dir_of_checkpoint("checkpoints/best.h5") == ".");
  CHECK(run_dir_of_checkpoint("/abs/run/checkpoints/best.h5") == "/abs/run");
  CHECK(run_dir_of_checkpoint("elsewhere/model.h5") == "elsewhere");
  CHECK(run_dir_of_checkpoint("model.h5") == ".");
  CHECK(trainer::app::timestamped_output_dir().rfind("outputs/", 0) == 0);
}

TEST_CASE("a lightning-pose checkpoint's model folder holds its tb_logs", "[app][output_files]") {
  const std::string ckpt = "outputs/2024-01-01/12-00-00/tb_logs/test/version_0/checkpoints/epoch=9-step=50-best.ckpt";
  CHECK(run_dir_of_checkpoint(ckpt) == "outputs/2024-01-01/12-00-00");
  CHECK(run_dir_of_checkpoint(ckpt + ".trainer.h5") == "outputs/2024-01-01/12-00-00");
  CHECK(run_dir_of_checkpoint("tb_logs/test/version_3/checkpoints/a.ckpt") == ".");
  // Only that layout: a run folder that happens to be called version_1 stays the run.
  CHECK(run_dir_of_checkpoint("runs/version_1/checkpoints/last.h5") == "runs/version_1");
}
