// model.cuda_graphs without a GPU: the recorder's policy (when a step runs, records
// or replays, and when recordings are forgotten), and the StepRunner's host half of a
// recorded step, through a stream that pretends to record. On the CPU the "recorded"
// work runs as it is queued and a launch runs nothing, so what the tests see is
// exactly what the host does per step; tests/gpu/test_cuda_step_graphs.cpp checks
// the device half against unrecorded steps.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "compute/backend.hpp"
#include "compute/losses/heatmap_mse.hpp"  // heatmap_mse_loss
#include "config/config.hpp"               // LossesConfig, DataConfig
#include "model/heatmap_model.hpp"
#include "train/optimizer.hpp"
#include "train/step.hpp"
#include "train/step_recorder.hpp"
#include "train/unsupervised_losses.hpp"
#include "train_test_util.hpp"

using namespace trainer;
using Action = train::StepRecorder::Action;

namespace {

struct CountingWork final : compute::RecordedWork {
  int* launches;
  explicit CountingWork(int* l) : launches(l) {}
  void launch(compute::Stream&) override { ++*launches; }
};

// A CPU stream that claims to record. end_recording() fails when asked to.
class PretendRecordingStream final : public compute::Stream {
 public:
  explicit PretendRecordingStream(compute::Stream& inner) : inner_(inner) {}
  std::unique_ptr<compute::Event> record() override { return inner_.record(); }
  void wait(const compute::Event& e) override { inner_.wait(e); }
  void synchronize() override { inner_.synchronize(); }
  void* native() const override { return nullptr; }
  bool can_record() const override { return true; }
  void begin_recording() override {
    REQUIRE_FALSE(recording);
    recording = true;
  }
  std::unique_ptr<compute::RecordedWork> end_recording() override {
    recording = false;
    if (fail_next) throw std::runtime_error("pretend capture failure");
    return std::make_unique<CountingWork>(&launches);
  }
  void abandon_recording() noexcept override {
    recording = false;
    ++abandoned;
  }
  bool recording = false, fail_next = false;
  int launches = 0, abandoned = 0;

 private:
  compute::Stream& inner_;
};

const train::StepRecorder::Shape kShapeA{{4, 3, 32, 32}, {4, 2, 8, 8}, true, 3, {}, false, false};
const train::StepRecorder::Shape kShapeB{{2, 3, 32, 32}, {2, 2, 8, 8}, true, 3, {}, false, false};      // a short last batch
const train::StepRecorder::Shape kShapeC{{4, 3, 64, 64}, {4, 2, 16, 16}, true, 3, {}, false, false};  // another image size
const train::StepRecorder::Shape kShapeAMeasured{{4, 3, 32, 32}, {4, 2, 8, 8}, true, 3, {}, false, true};
int slot1_images, slot2_images;  // their addresses stand for two staging slots
const train::StepRecorder::Key slot1{&slot1_images, nullptr}, slot2{&slot2_images, nullptr};

}  // namespace

TEST_CASE("step recorder: warm-up, one recording per slot and shape, replays, and forgetting",
          "[train][cuda_graphs]") {
  train::StepRecorder r;
  int launches = 0;
  const auto keep = [&](const train::StepRecorder::Key& k) { r.keep(k, std::make_unique<CountingWork>(&launches), {1}); };
  CHECK(r.decide(kShapeA, slot1, 0) == Action::run);  // not enabled
  std::vector<std::string> warnings;
  r.enable([&](const std::string& w) { warnings.push_back(w); });
  CHECK(r.decide(kShapeA, slot1, 0) == Action::run);  // the shape's warm-up
  CHECK(r.decide(kShapeA, slot2, 0) == Action::record);
  keep(slot2);
  CHECK(r.decide(kShapeA, slot1, 0) == Action::record);
  keep(slot1);
  CHECK(r.decide(kShapeA, slot2, 0) == Action::replay);
  CHECK(r.decide(kShapeA, slot1, 0) == Action::replay);
  CHECK(r.recordings() == 2);
  // A measured step of the same batch shape is a shape of its own: its soft-argmax
  // may grow the stream scratch, so it warms up before it records.
  CHECK(r.decide(kShapeAMeasured, slot1, 0) == Action::run);
  CHECK(r.decide(kShapeAMeasured, slot1, 0) == Action::record);
  keep(slot1);
  CHECK(r.decide(kShapeAMeasured, slot1, 0) == Action::replay);
  CHECK(r.recordings() == 3);
  // An unrecorded step of the same shape keeps them.
  r.unrecorded_step(kShapeA);
  CHECK(r.decide(kShapeA, slot1, 0) == Action::replay);
  // An epoch's short last batch (the same image size) warms up and records beside
  // them; the full batches after it still replay, and so does it in the next epoch.
  CHECK(r.decide(kShapeB, slot1, 0) == Action::run);
  CHECK(r.recordings() == 3);
  CHECK(r.decide(kShapeA, slot2, 0) == Action::replay);
  CHECK(r.decide(kShapeB, slot1, 0) == Action::record);
  keep(slot1);
  CHECK(r.recordings() == 4);
  CHECK(r.decide(kShapeA, slot1, 0) == Action::replay);
  CHECK(r.decide(kShapeB, slot1, 0) == Action::replay);
  // Validation at the same image size keeps them too.
  r.other_work({9, 3, 32, 32});
  CHECK(r.recordings() == 4);
  CHECK(r.decide(kShapeA, slot1, 0) == Action::replay);
  // A released block (the generation moved: a buffer grew, maybe one they use):
  // every recording goes, but the shapes stay sized (buffers only grow), so they
  // record again at once.
  CHECK(r.decide(kShapeA, slot2, 1) == Action::record);
  CHECK(r.recordings() == 0);
  keep(slot2);
  CHECK(r.decide(kShapeA, slot2, 1) == Action::replay);
  CHECK(r.decide(kShapeB, slot2, 1) == Action::record);
  keep(slot2);
  // Work at another image size forgets everything, the sized shapes too.
  r.other_work({4, 3, 64, 64});
  CHECK(r.recordings() == 0);
  CHECK(r.decide(kShapeA, slot1, 1) == Action::run);
  CHECK(r.decide(kShapeA, slot1, 1) == Action::record);
  keep(slot1);
  r.unrecorded_step(kShapeC);  // so does an unrecorded step at another size
  CHECK(r.recordings() == 0);
  CHECK(r.decide(kShapeC, slot1, 1) == Action::record);  // kShapeC just ran unrecorded
  keep(slot1);
  CHECK(r.decide(kShapeA, slot1, 1) == Action::run);
  // A run whose batches keep changing keeps at most kMaxRecordings.
  int unlabeled_slots[80];  // their addresses stand for 80 pairs of slots
  bool cleared = false;
  for (int v = 0; v < 80; ++v) {
    const train::StepRecorder::Key k{&slot2_images, &unlabeled_slots[v]};
    REQUIRE(r.decide(kShapeA, k, 1) == Action::record);
    keep(k);
    REQUIRE(r.recordings() <= train::StepRecorder::kMaxRecordings);
    cleared |= r.recordings() == 1 && v > 0;
  }
  CHECK(cleared);
  r.forget();
  CHECK(r.recordings() == 0);
  CHECK(r.decide(kShapeA, slot1, 1) == Action::run);
  // A failure warns once and stops recording for the run.
  r.fail("cudaErrorStreamCaptureUnsupported");
  CHECK(r.decide(kShapeA, slot1, 1) == Action::run);
  CHECK(r.decide(kShapeA, slot2, 1) == Action::run);
  REQUIRE(warnings.size() == 1);
  // Steps seen while enabled (the disabled call before enable() not counted), replays,
  // recordings kept.
  CHECK(r.counts().steps == 103);
  CHECK(r.counts().replayed == 9);
  CHECK(r.counts().recorded == 88);
  CHECK(warnings[0].find("cudaErrorStreamCaptureUnsupported") != std::string::npos);
  CHECK(warnings[0].find("without CUDA graphs") != std::string::npos);
  CHECK(launches == 0);
}

namespace {

// One initialization, recording through the pretend stream (or running op by op);
// semi-supervised with the temporal loss on the unlabelled frames (every move
// penalized) when asked.
struct RecordingRun {
  std::unique_ptr<compute::Backend> backend;
  PretendRecordingStream stream{backend->default_stream()};
  model::HeatmapModel net;
  train::Optimizer optimizer;
  std::optional<train::UnsupervisedLosses> losses;
  train::StepRunner runner;
  std::vector<std::string> warnings;
  static LossesConfig temporal_losses() {
    LossesConfig c;
    c.temporal_log_weight = 0.0;
    c.temporal_epsilon = {0.0};
    c.temporal_prob_threshold = 0.0;
    return c;
  }
  explicit RecordingRun(bool record = true, bool semi = false,
                        compute::Precision precision = compute::Precision::fp32)
      : backend(compute::make_cpu_backend(2, precision)),
        net(*backend, model::ModelSpec{"resnet18", 2, 2}),
        optimizer(net.store(), train::OptimizerConfig{}),
        runner(*backend, stream, net, compute::heatmap_mse_loss()) {
    net.initialize(0, stream);
    optimizer.set_group(model::ParamGroup::head, 1e-3, true);
    optimizer.set_group(model::ParamGroup::backbone, 1e-3, true);
    if (semi) {
      losses.emplace(*backend, stream, std::vector<std::string>{"temporal"}, temporal_losses(), DataConfig{}, 2,
                     std::vector<float>{}, nullptr);
      runner.set_unsupervised(&*losses);
    }
    if (record) runner.record_steps([this](const std::string& w) { warnings.push_back(w); });
  }
  std::vector<float> params() {
    auto& s = net.store();
    return std::vector<float>(s.params_data(), s.params_data() + s.parameter_count());
  }
  std::int64_t bn_batches() const { return net.store().counters().at(0).value; }
  long optimizer_steps() { return optimizer.steps(model::ParamGroup::backbone, stream); }
};

}  // namespace

TEST_CASE("a recorded step's host half runs on every step, its device half once", "[train][cuda_graphs]") {
  RecordingRun r;
  train::LocalGradientSync sync;
  train_test::MemorySource src(8, 4, 32, 2, 5);
  src.start_epoch(0);
  const data::Batch batch = *src.next();
  std::vector<std::vector<float>> after;
  for (int step = 0; step < 5; ++step) {  // run, record, record, replay, replay
    r.runner.train_step(batch, r.optimizer, sync, true, nullptr);
    after.push_back(r.params());
  }
  CHECK(r.warnings.empty());
  CHECK(r.runner.recorded_steps() == 2);
  // Each recording is launched once after it is recorded, then once per replay.
  CHECK(r.stream.launches == 4);
  // Host state advances on every step, replays included: the optimizer's step count
  // (its bias corrections) and batch norm's num_batches_tracked.
  CHECK(r.optimizer_steps() == 5);
  CHECK(r.bn_batches() == 5);
  // The device work ran in the warm-up and in each recording (the CPU runs it as it
  // is queued), and not again when launched: a recorded step is not run twice.
  CHECK(after[1] != after[0]);
  CHECK(after[2] != after[1]);
  CHECK(after[3] == after[2]);
  CHECK(after[4] == after[2]);
  CHECK(r.runner.take_loss_sum().second == 5);
  CHECK(r.runner.recording_counts().steps == 5);
  CHECK(r.runner.recording_counts().replayed == 2);
  CHECK(r.runner.recording_counts().recorded == 2);
  // A measured step (the logged training RMSE) is a shape of its own, which warms up
  // (its soft-argmax may grow the stream scratch) and then records; its keypoints
  // come back from a recording too.
  r.runner.train_step(batch, r.optimizer, sync, true, nullptr);  // a sixth step replays
  CHECK(r.runner.recorded_steps() == 2);
  r.runner.measure_next_step();
  r.runner.train_step(batch, r.optimizer, sync, true, nullptr);
  CHECK(r.runner.recorded_steps() == 2);
  r.runner.measure_next_step();
  r.runner.train_step(batch, r.optimizer, sync, true, nullptr);
  CHECK(r.runner.recorded_steps() == 3);
  r.runner.request_loss();
  CHECK(r.runner.requested_values().rmse >= 0);
  // Validation at the training images' size keeps the recordings (and the step after
  // it replays) unless it released a block: the generation tells.
  const std::uint64_t blocks = r.backend->released_blocks();
  r.runner.evaluate(batch);
  const bool released = r.backend->released_blocks() != blocks;
  const int launches = r.stream.launches;
  r.runner.train_step(batch, r.optimizer, sync, true, nullptr);
  CHECK(r.runner.recorded_steps() == (released ? 1 : 3));
  CHECK(r.stream.launches == launches + 1);  // replayed, or recorded and launched
  r.runner.evaluate(batch);  // a second validation grows nothing: nothing goes
  r.runner.train_step(batch, r.optimizer, sync, true, nullptr);
  r.runner.train_step(batch, r.optimizer, sync, true, nullptr);
  CHECK(r.runner.recorded_steps() == (released ? 2 : 3));
  CHECK(r.runner.recording_counts().replayed == (released ? 4 : 6));
  // Validation at another image size forgets them: the next step warms up again.
  train_test::MemorySource big(8, 4, 64, 2, 5);
  big.start_epoch(0);
  r.runner.evaluate(*big.next());
  CHECK(r.runner.recorded_steps() == 0);
}

TEST_CASE("an epoch's short last batch records beside the full batches, which keep replaying",
          "[train][cuda_graphs]") {
  RecordingRun r;
  train::LocalGradientSync sync;
  train_test::MemorySource src(10, 4, 32, 2, 5);  // batches of 4, 4 and 2
  const auto epoch = [&] {
    src.start_epoch(0);
    while (const data::Batch* b = src.next()) r.runner.train_step(*b, r.optimizer, sync, true, nullptr);
  };
  // Three batches an epoch rotate over the stager's two slots: after four epochs each
  // shape has run on each slot, warmed up and recorded.
  for (int e = 0; e < 4; ++e) epoch();
  const auto warm = r.runner.recording_counts();
  CHECK(warm.recorded == 4);  // (full, short) x (slot 1, slot 2)
  epoch();
  epoch();
  const auto c = r.runner.recording_counts();
  CHECK(r.warnings.empty());
  // Then every step replays: the full batches' recordings and the short batch's, side
  // by side (before, the short batch dropped them every epoch).
  CHECK(c.steps - warm.steps == 6);
  CHECK(c.replayed - warm.replayed == 6);
  CHECK(c.recorded == warm.recorded);
  CHECK(r.runner.recorded_steps() == 4);
  CHECK(r.optimizer_steps() == 18);
  CHECK(r.bn_batches() == 18);
}

TEST_CASE("a failed recording undoes its host side, runs the step, and stops recording", "[train][cuda_graphs]") {
  RecordingRun r;
  train::LocalGradientSync sync;
  train_test::MemorySource src(8, 4, 32, 2, 5);
  src.start_epoch(0);
  const data::Batch batch = *src.next();
  r.runner.train_step(batch, r.optimizer, sync, true, nullptr);  // warm-up
  r.stream.fail_next = true;
  const auto before = r.params();
  r.runner.train_step(batch, r.optimizer, sync, true, nullptr);  // recording fails
  CHECK(r.stream.abandoned == 1);
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].find("pretend capture failure") != std::string::npos);
  // The counters count the step once (the failed recording's increments undone), and
  // later steps run op by op. (Here the failed recording's work also ran, as the CPU
  // runs work when it is queued; on a GPU nothing recorded runs.)
  CHECK(r.bn_batches() == 2);
  CHECK(r.optimizer_steps() == 2);
  const auto after_failure = r.params();
  CHECK(after_failure != before);
  r.stream.fail_next = false;
  r.runner.train_step(batch, r.optimizer, sync, true, nullptr);
  CHECK(r.runner.recorded_steps() == 0);
  CHECK(r.stream.launches == 0);
  CHECK(r.params() != after_failure);
  CHECK(r.warnings.size() == 1);
}


TEST_CASE("semi-supervised steps record with their unlabelled frames; recorded, they compute the op-by-op step",
          "[train][cuda_graphs]") {
  // lightning-pose's warm-up epochs (importance 0: the unlabelled frames only run
  // forward) and the later ones (their losses run backward too) are recordings of
  // their own shape. On the CPU a recorded step's device work runs as it is queued:
  // its warm-up and its recordings must give the op-by-op step's weights and loss
  // sums bit for bit (the unlabelled pass, the held labelled gradients, the maps).
  std::vector<std::vector<float>> after_three;  // per importance
  for (const double importance : {0.0, 0.5}) {
    INFO("importance " << importance);
    RecordingRun recorded(true, true), plain(false, true);
    train::LocalGradientSync sync;
    train_test::MemorySource labelled(8, 4, 32, 2, 5), video(8, 4, 32, 2, 9);
    labelled.start_epoch(0);
    video.start_epoch(0);
    const data::Batch batch = *labelled.next();
    data::Batch frames = *video.next();
    frames.scale_x.assign(std::size_t(frames.size), 1.5f);  // original-frame pixels
    frames.scale_y.assign(std::size_t(frames.size), 0.75f);
    for (int step = 0; step < 3; ++step) {  // run, record (slot pair 2), record (slot pair 1)
      // Each step's frames augmented by another map (lightning-pose's per-batch
      // augmentation): the map travels in device memory, not in the recording.
      frames.keypoint_unwarp = {1.f + 0.05f * step, 0.1f, -2.f, -0.05f, 0.9f, 3.f + step};
      recorded.runner.train_step(batch, recorded.optimizer, sync, true, nullptr, &frames, importance);
      plain.runner.train_step(batch, plain.optimizer, sync, true, nullptr, &frames, importance);
      CHECK(recorded.params() == plain.params());
    }
    after_three.push_back(plain.params());
    CHECK(recorded.warnings.empty());
    CHECK(recorded.runner.recording_counts().recorded == 2);
    const auto sums = recorded.runner.take_unsupervised_sums();
    REQUIRE(sums.size() == 1);
    CHECK(sums[0] > 0);  // the temporal term is active
    CHECK(sums == plain.runner.take_unsupervised_sums());
    CHECK(recorded.runner.take_loss_sum() == plain.runner.take_loss_sum());
    recorded.runner.train_step(batch, recorded.optimizer, sync, true, nullptr, &frames, importance);
    CHECK(recorded.runner.recording_counts().replayed == 1);
    CHECK(recorded.stream.launches == 3);  // two recordings launched once each, one replay
  }
  CHECK(after_three[0] != after_three[1]);  // the unlabelled frames' losses did train at importance 0.5
  // The importance changing from 0 to above (the end of the warm-up) is another shape:
  // it warms up again rather than recording work whose buffers were never sized.
  RecordingRun r(true, true);
  train::LocalGradientSync sync;
  train_test::MemorySource labelled(8, 4, 32, 2, 5), video(8, 4, 32, 2, 9);
  labelled.start_epoch(0);
  video.start_epoch(0);
  const data::Batch batch = *labelled.next(), frames = *video.next();
  for (int step = 0; step < 3; ++step) r.runner.train_step(batch, r.optimizer, sync, true, nullptr, &frames, 0.0);
  const auto before = r.runner.recording_counts();
  r.runner.train_step(batch, r.optimizer, sync, true, nullptr, &frames, 0.25);
  CHECK(r.runner.recording_counts().recorded == before.recorded);  // a warm-up, run op by op
  r.runner.train_step(batch, r.optimizer, sync, true, nullptr, &frames, 0.25);
  CHECK(r.runner.recording_counts().recorded == before.recorded + 1);
  CHECK(r.runner.recorded_steps() == 3);  // the warm-up's two beside the new one
  CHECK(r.warnings.empty());
}

TEST_CASE("16-mixed steps record: the loss scale, the skipped step and the Adam count live on the device",
          "[train][cuda_graphs][precision]") {
  // The scaler's whole decision is device work, so a recorded 16-mixed step must give
  // the op-by-op step bit for bit, an overflowing (skipped) step included, supervised
  // and semi-supervised (whose gradient map carries the scale too).
  for (const bool semi : {false, true}) {
    INFO((semi ? "semi-supervised" : "supervised"));
    RecordingRun recorded(true, semi, compute::Precision::fp16), plain(false, semi, compute::Precision::fp16);
    REQUIRE(recorded.runner.loss_scaler().enabled());
    train::LocalGradientSync sync;
    train_test::MemorySource labelled(8, 4, 32, 2, 5), video(8, 4, 32, 2, 9);
    labelled.start_epoch(0);
    video.start_epoch(0);
    const data::Batch batch = *labelled.next(), frames = *video.next();
    const auto step = [&](RecordingRun& r) {
      r.runner.train_step(batch, r.optimizer, sync, true, nullptr, semi ? &frames : nullptr, 0.5);
    };
    for (int i = 0; i < 3; ++i) {  // run, record (slot 2), record (slot 1)
      // The middle step's scale overflows fp16 in the emulated backward: it is skipped.
      if (i == 1) for (RecordingRun* r : {&recorded, &plain}) r->runner.loss_scaler().restore({1e30f, 0});
      if (i == 2) for (RecordingRun* r : {&recorded, &plain}) r->runner.loss_scaler().restore({1024.f, 0});
      const auto before = plain.params();
      step(recorded);
      step(plain);
      CHECK(recorded.params() == plain.params());
      CHECK((plain.params() == before) == (i == 1));
    }
    CHECK(recorded.warnings.empty());
    CHECK(recorded.runner.recording_counts().recorded == 2);
    for (RecordingRun* r : {&recorded, &plain}) {
      CHECK(r->runner.loss_scaler().skipped_steps() == 1);
      CHECK(r->optimizer_steps() == 2);  // the skipped step does not count
      CHECK(r->runner.loss_scaler().state().scale == 1024.f);
      CHECK(r->runner.loss_scaler().state().growth_tracker == 1);
    }
    CHECK(recorded.runner.take_loss_sum() == plain.runner.take_loss_sum());
    if (semi) CHECK(recorded.runner.take_unsupervised_sums() == plain.runner.take_unsupervised_sums());
  }
}

TEST_CASE("predictions record per slot and shape beside training steps, and fail over to op by op",
          "[train][cuda_graphs]") {
  RecordingRun r, plain(false);
  train_test::MemorySource src(8, 4, 32, 2, 5);
  src.start_epoch(0);
  const data::Batch batch = *src.next();
  train::Predictions expected;
  plain.runner.predict(batch, expected);
  for (int call = 0; call < 5; ++call) {  // run, record, record, replay, replay
    train::Predictions p;
    r.runner.predict(batch, p);
    INFO("prediction " << call);
    // On the CPU a launch runs nothing: a replay hands back what the last real run
    // left in the keypoint buffers, the same batch's, so the keypoints must match.
    CHECK(p.coords == expected.coords);
    CHECK(p.confidence == expected.confidence);
  }
  CHECK(r.warnings.empty());
  CHECK(r.runner.recorded_steps() == 2);
  CHECK(r.stream.launches == 4);
  const auto c = r.runner.recording_counts();
  CHECK(c.predictions == 5);
  CHECK(c.predictions_replayed == 2);
  CHECK(c.steps == 0);  // the training steps' count (cmd_train's line) leaves predictions out
  CHECK(r.bn_batches() == 0);  // evaluation forwards leave num_batches_tracked alone
  // Training steps at the same image size are shapes of their own: the predictions'
  // recordings stay beside theirs.
  train::LocalGradientSync sync;
  r.runner.train_step(batch, r.optimizer, sync, true, nullptr);
  CHECK(r.runner.recording_counts().steps == 1);
  // A failed recording warns once, this prediction runs op by op, and nothing records
  // after it.
  train_test::MemorySource short_src(2, 2, 32, 2, 5);
  short_src.start_epoch(0);
  const data::Batch short_batch = *short_src.next();
  train::Predictions warm, failed;
  r.runner.predict(short_batch, warm);  // the short shape's warm-up
  r.stream.fail_next = true;
  r.runner.predict(short_batch, failed);  // its recording fails
  CHECK(r.stream.abandoned == 1);
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].find("recording a prediction failed") != std::string::npos);
  CHECK(failed.coords == warm.coords);
  CHECK(r.runner.recorded_steps() == 0);
}
