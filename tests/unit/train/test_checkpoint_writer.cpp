// The background checkpoint writer: what it writes equals a synchronous save, a
// waiting snapshot is superseded only when the newer one covers its files, a failed
// write surfaces at check() and never silently, and wait() leaves everything on disk.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "../scratch_dir.hpp"  // unit_test::ScratchDir
#include "compute/backend.hpp"
#include "model/heatmap_model.hpp"
#include "train/checkpoint.hpp"
#include "train/checkpoint_writer.hpp"
#include "train/optimizer.hpp"
#include "util/error.hpp"

using namespace trainer;

namespace {

struct Net {
  std::unique_ptr<compute::Backend> backend = compute::make_cpu_backend(1);
  model::HeatmapModel net{*backend, model::ModelSpec{"resnet18", 2, 2}};
  train::Optimizer optimizer{net.store(), train::OptimizerConfig{}};
  Net() { net.initialize(7, backend->default_stream()); }
  // As the training loop takes one: with `deferred`, the copies of the parameters and
  // moments are made by the writer's copier thread and the next update waits for them.
  void snapshot(train::CheckpointWriter& writer, const std::vector<std::string>& paths, long step,
                bool deferred = false) {
    train::TrainingState state;
    state.global_step = step;
    auto snap = writer.acquire(paths);
    train::take_snapshot(*snap, net.store(), &optimizer, state, backend->default_stream(),
                         deferred ? train::SnapshotCopies::deferred_on_the_cpu : train::SnapshotCopies::now);
    if (snap->deferred_done) optimizer.wait_before_update(snap->deferred_done);
    writer.submit(std::move(snap), paths);
  }
  std::vector<float> params() {
    std::vector<float> p(net.store().parameter_count());
    backend->download(p.data(), net.store().params_data(), p.size(), backend->default_stream());
    return p;
  }
};
}  // namespace

TEST_CASE("the writer's files equal a synchronous save and land before wait() returns", "[train][checkpoint]") {
  const unit_test::ScratchDir scratch_dir("writer-equal");
  const std::string dir = scratch_dir.str();
  Net n;
  train::TrainingState state;
  state.global_step = 3;
  train::save_checkpoint(dir + "/sync.h5", n.net.store(), &n.optimizer, state, n.backend->default_stream());
  {
    train::CheckpointWriter writer(n.net.store());
    n.snapshot(writer, {dir + "/async.h5", dir + "/best.h5"}, 3);
    writer.wait();
    REQUIRE(std::filesystem::exists(dir + "/async.h5"));
    REQUIRE(std::filesystem::exists(dir + "/best.h5"));
  }
  const auto a = train::load_training_state(dir + "/async.h5");
  CHECK(a.global_step == 3);
  CHECK(a.has_optimizer);
  // Same tensors: load both into fresh models and compare the flat buffers.
  Net x, y;
  train::load_model(dir + "/sync.h5", x.net.store(), x.backend->default_stream());
  train::load_model(dir + "/async.h5", y.net.store(), y.backend->default_stream());
  std::vector<float> px(x.net.store().parameter_count()), py(px.size());
  x.backend->download(px.data(), x.net.store().params_data(), px.size(), x.backend->default_stream());
  y.backend->download(py.data(), y.net.store().params_data(), py.size(), y.backend->default_stream());
  CHECK(px == py);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a weights-only snapshot has no optimizer state and cannot be resumed", "[train][checkpoint]") {
  const unit_test::ScratchDir scratch_dir("writer-weights");
  const std::string dir = scratch_dir.str();
  Net n;
  train::TrainingState state;
  train::save_checkpoint(dir + "/w.h5", n.net.store(), nullptr, state, n.backend->default_stream());
  train::save_checkpoint(dir + "/full.h5", n.net.store(), &n.optimizer, state, n.backend->default_stream());
  CHECK_FALSE(train::load_training_state(dir + "/w.h5").has_optimizer);
  CHECK(std::filesystem::file_size(dir + "/w.h5") * 2 < std::filesystem::file_size(dir + "/full.h5"));
  Net m;
  CHECK_THROWS_AS(train::load_optimizer(dir + "/w.h5", m.optimizer, m.backend->default_stream()), UserError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a failed write is reported at check(), once, and later writes go on", "[train][checkpoint]") {
  const unit_test::ScratchDir scratch_dir("writer-fail");
  const std::string dir = scratch_dir.str();
  Net n;
  train::CheckpointWriter writer(n.net.store());
  n.snapshot(writer, {dir + "/no/such/folder/last.h5"}, 1);
  CHECK_THROWS_AS(writer.wait(), SystemError);
  CHECK_FALSE(writer.failed());  // reported once
  n.snapshot(writer, {dir + "/last.h5"}, 2);
  writer.wait();
  CHECK(train::load_training_state(dir + "/last.h5").global_step == 2);
  std::filesystem::remove_all(dir);
}

TEST_CASE("many snapshots in a row: the files hold the newest one", "[train][checkpoint]") {
  const bool deferred = GENERATE(false, true);
  INFO("deferred copies: " << deferred);
  const unit_test::ScratchDir scratch_dir("writer-" + std::string(deferred ? "supersede_deferred" : "supersede"));
  const std::string dir = scratch_dir.str();
  Net n;
  {
    train::CheckpointWriter writer(n.net.store());
    for (long step = 1; step <= 6; ++step) n.snapshot(writer, {dir + "/last.h5"}, step, deferred);
    n.snapshot(writer, {dir + "/last.h5", dir + "/best.h5"}, 7, deferred);
    n.snapshot(writer, {dir + "/last.h5"}, 8, deferred);  // must not supersede step 7's best.h5
  }  // the destructor waits
  CHECK(train::load_training_state(dir + "/last.h5").global_step == 8);
  CHECK(train::load_training_state(dir + "/best.h5").global_step == 7);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a deferred snapshot holds the parameters of its boundary although the update follows at once",
          "[train][checkpoint]") {
  const unit_test::ScratchDir scratch_dir("writer-deferred");
  const std::string dir = scratch_dir.str();
  Net n;
  auto& backend = *n.backend;
  auto& stream = backend.default_stream();
  backend.fill(n.net.store().grads_data(), 0.5f, n.net.store().parameter_count(), stream);
  n.optimizer.set_group(model::ParamGroup::backbone, 1e-2, true);
  n.optimizer.set_group(model::ParamGroup::head, 1e-2, true);
  const std::vector<float> before = n.params();
  {
    train::CheckpointWriter writer(n.net.store());
    n.snapshot(writer, {dir + "/last.h5"}, 1, true);
    n.optimizer.step(stream);  // waits for the copier, then moves every parameter by about lr
    const bool moved = n.params() != before;  // (a bool: Catch would print 11 M floats)
    CHECK(moved);
    writer.wait();
  }
  Net loaded;
  train::load_model(dir + "/last.h5", loaded.net.store(), loaded.backend->default_stream());
  const bool saved_before_update = loaded.params() == before;
  CHECK(saved_before_update);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a mid-epoch checkpoint keeps the epoch's loss sums, the unsupervised ones by name", "[train][checkpoint]") {
  const unit_test::ScratchDir scratch_dir("writer-sums");
  const std::string dir = scratch_dir.str();
  Net n;
  train::TrainingState state;
  state.batches_into_epoch = 3;
  state.epoch_loss_sum = 0.25;
  state.epoch_steps = 6;
  state.epoch_unsupervised_sums = {{"pca_singleview", 12.5}, {"temporal", 0.75}};
  train::save_checkpoint(dir + "/last.h5", n.net.store(), &n.optimizer, state, n.backend->default_stream());
  const auto loaded = train::load_training_state(dir + "/last.h5");
  CHECK(loaded.batches_into_epoch == 3);
  CHECK(loaded.epoch_loss_sum == 0.25);
  CHECK(loaded.epoch_steps == 6);
  CHECK(loaded.epoch_unsupervised_sums == state.epoch_unsupervised_sums);
  std::filesystem::remove_all(dir);
}
