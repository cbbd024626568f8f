// The step's lightning-pose metrics: val_supervised_rmse in network-input (resized)
// pixels beside the stored-frame RMSE, and train_supervised_rmse measured only for the
// steps that log it, each step's measurement kept apart from the next one's.
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "compute/backend.hpp"
#include "compute/losses/heatmap_mse.hpp"  // heatmap_mse_loss
#include "model/heatmap_model.hpp"
#include "train/optimizer.hpp"
#include "train/step.hpp"
#include "train_test_util.hpp"

using namespace trainer;

namespace {
struct Run {
  std::unique_ptr<compute::Backend> backend = compute::make_cpu_backend(2);
  model::HeatmapModel net;
  train::Optimizer optimizer;
  train::StepRunner runner;
  Run()
      : net(*backend, model::ModelSpec{"resnet18", 2, 2}),
        optimizer(net.store(), train::OptimizerConfig{}),
        runner(*backend, backend->default_stream(), net, compute::heatmap_mse_loss()) {
    net.initialize(0, backend->default_stream());
    optimizer.set_group(model::ParamGroup::head, 0.0, true);  // lr 0: the same weights every step
    optimizer.set_group(model::ParamGroup::backbone, 0.0, true);
  }
};
}  // namespace

TEST_CASE("val_supervised_rmse is in network-input pixels, val_rmse_px in the stored frame's", "[train][metrics]") {
  Run r;
  train_test::MemorySource src(4, 4, 32, 2, 5);
  src.start_epoch(0);
  data::Batch batch = *src.next();
  const train::EvalSums plain = r.runner.evaluate(batch);
  REQUIRE(plain.rmse_count > 0);
  CHECK(plain.rmse_input_sum == Approx(plain.rmse_sum));  // no resize: the same pixels
  // Frames stored at twice the network input: the stored-frame error doubles, the
  // resized one stays.
  for (auto& s : batch.scale_x) s = 2.f;
  for (auto& s : batch.scale_y) s = 2.f;
  const train::EvalSums scaled = r.runner.evaluate(batch);
  CHECK(scaled.rmse_input_sum == Approx(plain.rmse_input_sum).epsilon(1e-5));
  CHECK(scaled.rmse_sum == Approx(2 * plain.rmse_sum).epsilon(1e-5));
}

TEST_CASE("train_supervised_rmse: measured for the logged step only, in network-input pixels", "[train][metrics]") {
  Run r;
  train::LocalGradientSync sync;
  train_test::MemorySource src(8, 4, 32, 2, 5);
  src.start_epoch(0);
  const data::Batch first = *src.next();
  const data::Batch second = *src.next();
  // Unmeasured: no RMSE.
  r.runner.train_step(first, r.optimizer, sync, true, nullptr);
  r.runner.request_loss();
  CHECK(r.runner.requested_values().rmse < 0);
  // The same weights (lr 0) in eval mode give other keypoints (BN running statistics),
  // so compare the two measured steps with each other: step 1 measured, step 2 measured
  // before step 1's values are read (log_every_n_steps = 1), each keeps its own batch.
  r.runner.measure_next_step();
  r.runner.train_step(first, r.optimizer, sync, true, nullptr);
  r.runner.request_loss();
  const train::StepValues alone = r.runner.requested_values();
  REQUIRE(alone.rmse >= 0);
  r.runner.measure_next_step();
  r.runner.train_step(first, r.optimizer, sync, true, nullptr);
  r.runner.request_loss();
  r.runner.measure_next_step();
  r.runner.train_step(second, r.optimizer, sync, true, nullptr);  // queued before the first is read
  const train::StepValues interleaved = r.runner.requested_values();
  CHECK(interleaved.rmse == Approx(alone.rmse).epsilon(1e-5));
  r.runner.request_loss();
  CHECK(r.runner.requested_values().rmse >= 0);
}
