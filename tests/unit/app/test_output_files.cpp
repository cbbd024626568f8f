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
