// Lightning's batch settings in the step and the loop: accumulate_grad_batches (the
// loss of each batch divided by n, one all-reduce and one optimizer step per group),
// val_check_interval (validation inside the epoch) and ckpt_every_n_epochs (periodic
// checkpoints named epoch=E-step=S, all kept).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "../scratch_dir.hpp"  // unit_test::ScratchDir
#include "compute/backend.hpp"
#include "compute/losses/heatmap_mse.hpp"  // heatmap_mse_loss
#include "model/heatmap_model.hpp"
#include "train/checkpoint.hpp"
#include "train/optimizer.hpp"
#include "train/step.hpp"
#include "train/train_loop.hpp"
#include "train_test_util.hpp"
#include "util/error.hpp"

using namespace trainer;

namespace {


struct Run {
  std::unique_ptr<compute::Backend> backend = compute::make_cpu_backend(2);
  model::HeatmapModel net;
  train::Optimizer optimizer;
  train::StepRunner runner;
  explicit Run(int k)
      : net(*backend, model::ModelSpec{"resnet18", k, 2}),
        optimizer(net.store(), train::OptimizerConfig{}),
        runner(*backend, backend->default_stream(), net, compute::heatmap_mse_loss()) {
    net.initialize(0, backend->default_stream());
  }
  std::vector<float> grads() {
    std::vector<float> g(net.store().parameter_count());
    backend->download(g.data(), net.store().grads_data(), g.size(), backend->default_stream());
    backend->default_stream().synchronize();
    return g;
  }
};

// Counts what reaches the other ranks: begin() opens a step's all-reduces, each
// on_ready() a parameter announced to them.
class CountingSync final : public train::GradientSync {
 public:
  int begins = 0, finishes = 0;
  long announced = 0;
  void begin(std::size_t, std::size_t, compute::Stream&) override { ++begins; }
  void on_ready(std::size_t, std::size_t, compute::Stream&) override { ++announced; }
  void finish(compute::Stream&) override { ++finishes; }
};

train::LoopConfig loop_config(const std::string& dir, int epochs) {
  train::LoopConfig c;
  c.max_epochs = epochs;
  c.check_val_every_n_epoch = 1;
  c.early_stop_patience = 100;
  c.log_every_n_steps = 0;
  c.lr.base_lr = 1e-3;
  c.lr.unfreezing_epoch = 0;
  c.out_dir = dir;
  return c;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// The cell `column` of a CSV line.
std::string cell(const std::string& line, int column) {
  std::size_t start = 0;
  for (int i = 0; i < column; ++i) start = line.find(',', start) + 1;
  return line.substr(start, line.find(',', start) - start);
}

}  // namespace

TEST_CASE("accumulated gradients are the mean of the batches' gradients, one step per group",
          "[train][accumulate]") {
  // lr 0: the weights stay put, so each batch's gradient alone is comparable.
  train_test::MemorySource src(8, 4, 32, 2, 5);
  const auto set_lr0 = [](Run& r) {
    r.optimizer.set_group(model::ParamGroup::head, 0.0, true);
    r.optimizer.set_group(model::ParamGroup::backbone, 0.0, true);
  };
  Run alone(2);
  set_lr0(alone);
  train::LocalGradientSync local;
  src.start_epoch(0);
  alone.runner.train_step(*src.next(), alone.optimizer, local, true, nullptr);
  const auto first = alone.grads();
  alone.runner.train_step(*src.next(), alone.optimizer, local, true, nullptr);
  const auto second = alone.grads();
  CHECK(alone.optimizer.steps(model::ParamGroup::head, alone.backend->default_stream()) == 2);

  Run grouped(2);
  set_lr0(grouped);
  CountingSync sync;
  src.start_epoch(0);
  grouped.runner.train_step(*src.next(), grouped.optimizer, sync, true, nullptr, nullptr, 0.0,
                            train::MicroBatch{2, false});
  // Nothing reached the other ranks, and no optimizer step.
  CHECK(sync.begins == 0);
  CHECK(sync.announced == 0);
  CHECK(grouped.runner.holds_gradients());
  CHECK(grouped.optimizer.steps(model::ParamGroup::head, grouped.backend->default_stream()) == 0);
  grouped.runner.train_step(*src.next(), grouped.optimizer, sync, true, nullptr, nullptr, 0.0,
                            train::MicroBatch{2, true});
  CHECK(sync.begins == 1);
  CHECK(sync.finishes == 1);
  CHECK(sync.announced > 0);
  CHECK_FALSE(grouped.runner.holds_gradients());
  CHECK(grouped.optimizer.steps(model::ParamGroup::head, grouped.backend->default_stream()) == 1);
  const auto summed = grouped.grads();
  REQUIRE(summed.size() == first.size());
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < summed.size(); ++i) {
    const double want = 0.5 * (double(first[i]) + double(second[i]));
    worst = std::max(worst, std::abs(double(summed[i]) - want));
    scale = std::max(scale, std::abs(want));
  }
  INFO("largest difference " << worst << " of gradients up to " << scale);
  CHECK(scale > 0);
  CHECK(worst <= 1e-5 * scale);
}

TEST_CASE("the loop steps once per accumulate_grad_batches batches and at each epoch's end",
          "[train][accumulate]") {
  const unit_test::ScratchDir scratch_dir("lb-accumulate");
  const std::string dir = scratch_dir.str();
  train_test::MemorySource src(12, 4, 32, 2, 3);  // 3 batches per epoch
  Run r(2);
  train::LoopConfig config = loop_config(dir, 2);
  config.accumulate_grad_batches = 2;
  train::TrainLoop loop(r.runner, r.net, r.optimizer, src, nullptr, config, {}, Log(0, true),
                        r.backend->default_stream());
  const auto state = loop.run({});
  // Per epoch: batches 1-2 step, batch 3 (the last) steps alone.
  CHECK(state.global_step == 4);
  CHECK(r.optimizer.steps(model::ParamGroup::head, r.backend->default_stream()) == 4);
  CHECK_FALSE(r.runner.holds_gradients());
  // The epoch rows name the optimizer steps; the mean loss is over all 3 batches.
  const auto lines = lines_of(dir + "/metrics.csv");
  REQUIRE(lines.size() == 3);
  CHECK(cell(lines[1], 1) == "2");
  CHECK(cell(lines[2], 1) == "4");
}

TEST_CASE("val_check_interval validates inside the epoch, as Lightning's val_check_batch", "[train][val_check]") {
  train_test::MemorySource val(4, 4, 32, 2, 9);
  const auto run = [&](const std::string& name, train::BatchLimit interval) {
    const unit_test::ScratchDir scratch_dir("lb-" + std::string(name));
    const std::string dir = scratch_dir.str();
    train_test::MemorySource src(16, 4, 32, 2, 3);  // 4 batches per epoch
    Run r(2);
    train::LoopConfig config = loop_config(dir, 1);
    config.val_check_interval = interval;
    train::TrainLoop loop(r.runner, r.net, r.optimizer, src, &val, config, {}, Log(0, true),
                          r.backend->default_stream());
    loop.run({});
    return lines_of(dir + "/metrics.csv");
  };
  SECTION("every 2 batches: after batch 2 (its own row) and batch 4 (the epoch's row)") {
    const auto lines = run("count", train::BatchLimit::count(2));
    REQUIRE(lines.size() == 3);
    CHECK(cell(lines[1], 1) == "2");
    CHECK(cell(lines[1], 2).empty());      // no train_loss: a validation row
    CHECK_FALSE(cell(lines[1], 3).empty());  // val_loss
    CHECK_FALSE(cell(lines[1], 13).empty());  // val_pixel_error_px
    CHECK(cell(lines[2], 1) == "4");
    CHECK_FALSE(cell(lines[2], 2).empty());
    CHECK_FALSE(cell(lines[2], 3).empty());
  }
  SECTION("a fraction: int(4 x 0.3) is 0, so every batch (max 1)") {
    const auto lines = run("fraction", train::BatchLimit::fraction(0.3));
    REQUIRE(lines.size() == 5);  // 3 inside, then the epoch's row with the 4th
    for (int i = 1; i <= 3; ++i) CHECK(cell(lines[i], 1) == std::to_string(i));
  }
  SECTION("3 of 4 batches: after batch 3, and none at the epoch's end") {
    const auto lines = run("three", train::BatchLimit::count(3));
    REQUIRE(lines.size() == 3);
    CHECK(cell(lines[1], 1) == "3");
    CHECK(cell(lines[2], 3).empty());  // the epoch's row has no validation
  }
  SECTION("more batches than the epoch has: refused, as Lightning does") {
    CHECK_THROWS_AS(run("too_many", train::BatchLimit::count(5)), UserError);
  }
}

TEST_CASE("ckpt_every_n_epochs keeps epoch=E-step=S checkpoints, all of them", "[train][checkpoint]") {
  const unit_test::ScratchDir scratch_dir("lb-periodic");
  const std::string dir = scratch_dir.str();
  train_test::MemorySource src(8, 4, 32, 2, 3);  // 2 batches per epoch
  Run r(2);
  train::LoopConfig config = loop_config(dir, 4);
  config.checkpoint_every_n_epochs = 2;
  train::TrainLoop loop(r.runner, r.net, r.optimizer, src, nullptr, config, {}, Log(0, true),
                        r.backend->default_stream());
  loop.run({});
  // Lightning's 0-based epoch in the name: (epoch + 1) % 2 == 0 -> epochs 1 and 3.
  const std::string first = dir + "/checkpoints/epoch=1-step=4.h5";
  const std::string second = dir + "/checkpoints/epoch=3-step=8.h5";
  REQUIRE(std::filesystem::exists(first));
  REQUIRE(std::filesystem::exists(second));
  CHECK_FALSE(std::filesystem::exists(dir + "/checkpoints/epoch=0-step=2.h5"));
  CHECK(train::load_training_state(first).global_step == 4);
  CHECK(train::load_training_state(second).epochs_completed == 4);
}
