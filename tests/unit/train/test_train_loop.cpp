// The loop end to end on in-memory data: the loss falls, checkpoints round-trip,
// and an interrupted + resumed run ends with bit-identical weights.
#include <catch2/catch.hpp>

#include <algorithm>  // std::fill, std::count_if
#include <cmath>      // std::fabs
#include <limits>     // std::numeric_limits
#include <stdexcept>  // std::runtime_error
#include <vector>     // std::vector

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

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
  Run(const char* arch, int k)
      : net(*backend, model::ModelSpec{arch, k, 2}),
        optimizer(net.store(), train::OptimizerConfig{}),
        runner(*backend, backend->default_stream(), net, compute::heatmap_mse_loss()) {
    net.initialize(0, backend->default_stream());
  }
  std::vector<float> params() {
    std::vector<float> p(net.store().parameter_count());
    backend->download(p.data(), net.store().params_data(), p.size(), backend->default_stream());
    backend->default_stream().synchronize();
    return p;
  }
};

train::LoopConfig loop_config(const std::string& dir, int epochs) {
  train::LoopConfig c;
  c.max_epochs = epochs;
  c.check_val_every_n_epoch = 1;
  c.early_stop_patience = 100;
  c.log_every_n_steps = 0;
  c.lr.base_lr = 1e-3;
  c.lr.unfreezing_epoch = 1;  // epoch 0 frozen, then unfrozen: both paths run
  c.out_dir = dir;
  return c;
}
}  // namespace

TEST_CASE("checkpoint round-trip restores every tensor, counter and optimizer state", "[train]") {
  const unit_test::ScratchDir scratch_dir("loop-roundtrip");
  const std::string dir = scratch_dir.str();
  Run a("resnet18", 3);
  train_test::MemorySource src(8, 4, 32, 3, 1);
  train::TrainLoop loop(a.runner, a.net, a.optimizer, src, nullptr, loop_config(dir, 2), {}, Log(0, true),
                        a.backend->default_stream());
  train::TrainingState st;
  st.backbone = "resnet18";
  st.config_text = "[training]\nmax_epochs = 2\n";
  st.model_type = "heatmap";
  a.runner.loss_scaler().restore({512.f, 3});  // saved with every checkpoint
  st = loop.run(st);
  const std::string path = dir + "/checkpoints/last.h5";
  REQUIRE(access(path.c_str(), F_OK) == 0);
  CHECK(access((dir + "/metrics.csv").c_str(), F_OK) == 0);

  Run b("resnet18", 3);
  b.net.initialize(99, b.backend->default_stream());
  train::load_model(path, b.net.store(), b.backend->default_stream());
  train::load_optimizer(path, b.optimizer, b.backend->default_stream());
  CHECK(a.params() == b.params());
  auto& s = a.backend->default_stream();
  for (std::size_t i = 0; i < a.net.store().buffers().size(); ++i)
    CHECK(a.net.store().download_buffer(i, s) == b.net.store().download_buffer(i, b.backend->default_stream()));
  CHECK(b.net.store().counter(0) == 4);  // 2 epochs x 2 steps
  CHECK(b.optimizer.steps(model::ParamGroup::head, b.backend->default_stream()) == 4);
  CHECK(b.optimizer.steps(model::ParamGroup::backbone, b.backend->default_stream()) == 4);  // stepped at lr 0 while frozen
  const auto state = train::load_training_state(path);
  CHECK(state.epochs_completed == 2);
  CHECK(state.global_step == 4);
  CHECK(state.config_text == st.config_text);
  CHECK(state.backbone == "resnet18");
  CHECK(state.model_type == "heatmap");
  CHECK(state.loss_scale == 512.f);
  CHECK(state.loss_scale_growth_tracker == 3);
}

TEST_CASE("checkpoint writes are atomic: no file under the final name after a failure", "[train]") {
  const unit_test::ScratchDir scratch_dir("loop-atomic");
  const std::string dir = scratch_dir.str();
  Run a("resnet18", 2);
  train::TrainingState st;
  const std::string missing = dir + "/no/such/folder/x.h5";
  CHECK_THROWS(train::save_checkpoint(missing, a.net.store(), &a.optimizer, st, a.backend->default_stream()));
  CHECK(access(missing.c_str(), F_OK) != 0);
  const std::string path = dir + "/ok.h5";
  train::save_checkpoint(path, a.net.store(), &a.optimizer, st, a.backend->default_stream());
  CHECK(access(path.c_str(), F_OK) == 0);
  CHECK(access((path + ".tmp-" + std::to_string(getpid())).c_str(), F_OK) != 0);
  // A file that is not a checkpoint, and a checkpoint for another model, are user errors.
  { std::ofstream(dir + "/junk.h5") << "not hdf5"; }
  CHECK_THROWS_AS(train::load_training_state(dir + "/junk.h5"), UserError);
  Run other("resnet18", 5);
  CHECK_THROWS_AS(train::load_model(path, other.net.store(), other.backend->default_stream()), UserError);
}

TEST_CASE("a run interrupted after epoch k and resumed matches the uninterrupted run bit for bit", "[train]") {
  const unit_test::ScratchDir full_dir("loop-full"), part_dir("loop-part");
  const std::string dir_full = full_dir.str(), dir_part = part_dir.str();
  train_test::MemorySource src_a(8, 4, 32, 2, 3), src_b(8, 4, 32, 2, 3), val(4, 4, 32, 2, 9);
  Run full("resnet18", 2);
  train::TrainLoop loop_full(full.runner, full.net, full.optimizer, src_a, &val, loop_config(dir_full, 3), {},
                             Log(0, true), full.backend->default_stream());
  loop_full.run({});

  {
    Run first("resnet18", 2);
    train::TrainLoop loop(first.runner, first.net, first.optimizer, src_b, &val, loop_config(dir_part, 2), {},
                          Log(0, true), first.backend->default_stream());
    loop.run({});
  }
  Run resumed("resnet18", 2);
  resumed.net.initialize(123, resumed.backend->default_stream());  // overwritten by the checkpoint
  const std::string ckpt = dir_part + "/checkpoints/last.h5";
  auto state = train::load_training_state(ckpt);
  CHECK(state.epochs_completed == 2);
  train::load_model(ckpt, resumed.net.store(), resumed.backend->default_stream());
  train::load_optimizer(ckpt, resumed.optimizer, resumed.backend->default_stream());
  train::TrainLoop loop(resumed.runner, resumed.net, resumed.optimizer, src_b, &val, loop_config(dir_part, 3), {},
                        Log(0, true), resumed.backend->default_stream());
  loop.run(state);
  CHECK(full.params() == resumed.params());
  std::ifstream metrics(dir_part + "/metrics.csv");
  int lines = 0;
  for (std::string l; std::getline(metrics, l);) ++lines;
  CHECK(lines == 4);  // header + 3 epochs
}

TEST_CASE("training on in-memory data lowers the loss", "[train]") {
  Run r("resnet18", 2);
  train_test::MemorySource src(8, 8, 32, 2, 5);
  train::LocalGradientSync sync;
  r.optimizer.set_group(model::ParamGroup::head, 5e-3, true);
  r.optimizer.set_group(model::ParamGroup::backbone, 5e-3, true);
  double first = 0, last = 0;
  for (int step = 0; step < 15; ++step) {
    src.start_epoch(0);
    r.runner.train_step(*src.next(), r.optimizer, sync, true, nullptr);
    r.runner.request_loss();
    const double loss = r.runner.requested_loss();
    if (step == 0) first = loss;
    last = loss;
  }
  INFO("first " << first << " last " << last);
  CHECK(last < 0.9 * first);
}

TEST_CASE("a frozen backbone (lr 0) keeps its weights while its Adam moments and step count accumulate",
          "[train]") {
  // lightning-pose's UnfreezeBackbone: the backbone is an optimizer group from the first
  // step with lr 0, so unfreezing meets warm moments, not a fresh Adam.
  for (const char* optimizer : {"Adam", "AdamW"}) {
    INFO(optimizer);
    Run r("resnet18", 2);
    train::OptimizerConfig config;
    config.type = optimizer;
    config.weight_decay = 0.01;
    train::Optimizer opt(r.net.store(), config);
    train_test::MemorySource src(8, 4, 32, 2, 5);  // two batches
    train::LocalGradientSync sync;
    opt.set_group(model::ParamGroup::head, 1e-3, true);
    opt.set_group(model::ParamGroup::backbone, 0, true);
    const auto before = r.params();
    src.start_epoch(0);
    r.runner.train_step(*src.next(), opt, sync, true, nullptr);
    r.runner.train_step(*src.next(), opt, sync, true, nullptr);
    const auto after = r.params();
    const auto head = r.net.store().group_range(model::ParamGroup::head);
    CHECK(std::equal(before.begin(), before.begin() + long(head.offset), after.begin()));  // bit for bit
    CHECK_FALSE(std::equal(before.begin() + long(head.offset), before.end(), after.begin() + long(head.offset)));
    CHECK(opt.steps(model::ParamGroup::backbone, r.backend->default_stream()) == 2);
    CHECK(opt.steps(model::ParamGroup::head, r.backend->default_stream()) == 2);
    std::vector<float> m(head.offset), v(head.offset), g(head.offset);  // the backbone is first
    r.backend->download(m.data(), opt.exp_avg(), m.size(), r.backend->default_stream());
    r.backend->download(v.data(), opt.exp_avg_sq(), v.size(), r.backend->default_stream());
    r.backend->download(g.data(), r.net.store().grads_data(), g.size(), r.backend->default_stream());
    r.backend->default_stream().synchronize();
    // The backbone's gradients reached its moments. (At 32x32, layer4 sees 1x1 maps, so
    // eight of its nine 3x3 taps meet only padding: their gradients are exactly 0.)
    long gradients = 0, moments = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
      if (std::fabs(g[i]) < 1e-30f) continue;  // zero, or a denormal the CPU flushes
      ++gradients;
      if (m[i] != 0.f || v[i] > 0.f) ++moments;  // (m may cancel exactly, v underflow)
    }
    CHECK(gradients > long(g.size()) / 4);
    CHECK(moments == gradients);
    CHECK(std::count_if(v.begin(), v.end(), [](float x) { return x > 0.f; }) > gradients * 9 / 10);
  }
}

TEST_CASE("the step runner sums training losses on the device until asked", "[train]") {
  Run r("resnet18", 2);
  train_test::MemorySource src(4, 2, 32, 2, 5);
  train::LocalGradientSync sync;
  r.optimizer.set_group(model::ParamGroup::head, 1e-3, true);
  r.optimizer.set_group(model::ParamGroup::backbone, 1e-3, true);
  src.start_epoch(0);
  double sum = 0;
  for (int step = 0; step < 2; ++step) {
    r.runner.train_step(*src.next(), r.optimizer, sync, true, nullptr);
    r.runner.request_loss();
    const double loss = r.runner.requested_loss();
    CHECK(loss > 0);
    sum += loss;
  }
  const auto taken = r.runner.take_loss_sum();
  CHECK(taken.second == 2);
  CHECK(taken.first == Approx(sum).epsilon(1e-6));
  const auto again = r.runner.take_loss_sum();  // the sum restarts
  CHECK(again.second == 0);
  CHECK(again.first == 0);
}

TEST_CASE("16-mixed: an overflowing step is skipped and the loss scale backs off", "[train][precision]") {
  std::unique_ptr<compute::Backend> backend = compute::make_cpu_backend(2, compute::Precision::fp16);
  model::HeatmapModel net(*backend, model::ModelSpec{"resnet18", 2, 2});
  net.initialize(0, backend->default_stream());
  train::Optimizer optimizer(net.store(), train::OptimizerConfig{});
  optimizer.set_group(model::ParamGroup::head, 1e-3, true);
  optimizer.set_group(model::ParamGroup::backbone, 1e-3, true);
  train::StepRunner runner(*backend, backend->default_stream(), net, compute::heatmap_mse_loss());
  REQUIRE(runner.loss_scaler().enabled());
  const auto params = [&] {
    std::vector<float> p(net.store().parameter_count());
    backend->download(p.data(), net.store().params_data(), p.size(), backend->default_stream());
    return p;
  };
  train_test::MemorySource src(4, 2, 32, 2, 5);
  train::LocalGradientSync sync;
  src.start_epoch(0);

  // A scale this large overflows fp16 in the emulated convolution backward.
  runner.loss_scaler().restore({1e30f, 7});
  const auto before = params();
  runner.train_step(*src.next(), optimizer, sync, true, nullptr);
  CHECK(params() == before);
  CHECK(runner.loss_scaler().skipped_steps() == 1);
  CHECK(runner.loss_scaler().state().scale == 5e29f);
  CHECK(runner.loss_scaler().state().growth_tracker == 0);
  CHECK(optimizer.steps(model::ParamGroup::head, backend->default_stream()) == 0);

  // A sane scale trains; the loss is reported unscaled either way.
  runner.loss_scaler().restore({1024.f, 0});
  runner.train_step(*src.next(), optimizer, sync, true, nullptr);
  runner.request_loss();
  const double loss = runner.requested_loss();
  CHECK(params() != before);
  CHECK(runner.loss_scaler().skipped_steps() == 1);
  CHECK(runner.loss_scaler().state().growth_tracker == 1);
  CHECK(loss > 0);
  CHECK(loss < 1);
}

TEST_CASE("on_epoch_end hears every epoch; a throwing listener warns and training goes on", "[train]") {
  const unit_test::ScratchDir scratch_dir("loop-epoch_listener");
  const std::string dir = scratch_dir.str();
  train_test::MemorySource src(8, 4, 32, 2, 3);
  Run r("resnet18", 2);
  std::vector<int> heard;
  train::LoopConfig config = loop_config(dir, 3);
  config.on_epoch_end = [&](int epochs_completed) {
    heard.push_back(epochs_completed);
    if (epochs_completed == 2) throw std::runtime_error("disk full");
  };
  train::TrainLoop loop(r.runner, r.net, r.optimizer, src, nullptr, config, {}, Log(0, true),
                        r.backend->default_stream());
  const auto state = loop.run({});
  CHECK(state.epochs_completed == 3);
  CHECK(heard == std::vector<int>{1, 2});  // no calls after the one that threw
}

TEST_CASE("a validation loss that is not finite stops the run from min_epochs on, as Lightning's check_finite",
          "[train]") {
  // EarlyStopping(check_finite=True), lightning-pose's: NaN signals the stop without
  // counting as a check without improvement; the trainer's should_stop stays set until
  // min_epochs allows it, also at an epoch end without validation.
  for (const int check_every : {1, 3}) {
    INFO("check_val_every_n_epoch " << check_every);
    const unit_test::ScratchDir scratch_dir("loop-nan");
    Run r("resnet18", 2);
    float* params = r.net.store().params_data();  // CPU: host memory
    std::fill(params, params + r.net.store().parameter_count(), std::numeric_limits<float>::quiet_NaN());
    train_test::MemorySource src(8, 4, 32, 2, 3), val(4, 4, 32, 2, 9);
    train::LoopConfig c = loop_config(scratch_dir.str(), 8);
    c.early_stopping = true;
    c.early_stop_patience = 100;  // the patience alone would train all 8 epochs
    c.min_epochs = 4;
    c.check_val_every_n_epoch = check_every;
    train::TrainLoop loop(r.runner, r.net, r.optimizer, src, &val, c, {}, Log(0, true),
                          r.backend->default_stream());
    train::TrainingState st;
    st.backbone = "resnet18";
    st.config_text = "[training]\nmax_epochs = 8\n";
    st.model_type = "heatmap";
    st = loop.run(st);
    // every 1: NaN from the first check, stopped at the 4th epoch's; every 3: NaN at
    // the 3rd epoch's check, stopped at the 4th epoch's end, which has no validation.
    CHECK(st.epochs_completed == 4);
    CHECK(st.bad_checks == 0);
  }
  // Without early stopping the run goes on (and says so once, in a warning).
  const unit_test::ScratchDir scratch_dir("loop-nan-on");
  Run r("resnet18", 2);
  float* params = r.net.store().params_data();
  std::fill(params, params + r.net.store().parameter_count(), std::numeric_limits<float>::quiet_NaN());
  train_test::MemorySource src(8, 4, 32, 2, 3), val(4, 4, 32, 2, 9);
  train::TrainLoop loop(r.runner, r.net, r.optimizer, src, &val, loop_config(scratch_dir.str(), 3), {}, Log(0, true),
                        r.backend->default_stream());
  train::TrainingState st;
  st.backbone = "resnet18";
  st.config_text = "[training]\nmax_epochs = 3\n";
  st.model_type = "heatmap";
  CHECK(loop.run(st).epochs_completed == 3);
}
