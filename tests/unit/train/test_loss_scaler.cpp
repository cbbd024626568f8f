// train::LossScaler: torch.cuda.amp.GradScaler's state machine (skip on inf/NaN,
// backoff, growth after N finite steps), run on the device through the backend ops,
// with the optimizer skipping (and not counting) the steps it flags.
#include <catch2/catch.hpp>

#include <limits>  // std::numeric_limits
#include <vector>  // std::vector

#include "compute/backend.hpp"
#include "model/heatmap_model.hpp"  // model::HeatmapModel
#include "train/loss_scaler.hpp"
#include "train/optimizer.hpp"      // train::Optimizer

using namespace trainer;
using trainer::compute::Precision;

TEST_CASE("loss scaler is off for 32 and bf16-mixed", "[train][precision]") {
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    auto be = compute::make_cpu_backend(1, p);
    train::LossScaler scaler(*be, be->default_stream());
    CHECK_FALSE(scaler.enabled());
    CHECK(scaler.skip_flag() == nullptr);
    std::vector<float> g{1.f, std::numeric_limits<float>::infinity()};
    scaler.scale_gradient(g.data(), g.size());
    scaler.unscale_and_update(g.data(), g.size());
    CHECK(g[0] == 1.f);  // untouched
    CHECK(scaler.skipped_steps() == 0);
    // A checkpoint of such a run carries GradScaler's initial values, or what it resumed.
    CHECK(scaler.state().scale == 65536.f);
    scaler.restore({512.f, 3});
    CHECK(scaler.state().scale == 512.f);
    CHECK(scaler.state().growth_tracker == 3);
  }
}

TEST_CASE("loss scaler for 16-mixed: scale, unscale, skip on inf, backoff, growth", "[train][precision]") {
  auto be = compute::make_cpu_backend(1, Precision::fp16);
  compute::Stream& s = be->default_stream();
  train::LossScalerOptions o;
  o.rule.growth_interval = 3;
  train::LossScaler scaler(*be, s, o);
  REQUIRE(scaler.enabled());
  CHECK(scaler.state().scale == 65536.f);
  const auto flag = [&] { return *scaler.skip_flag(); };  // CPU "device" memory

  // The loss gradient is multiplied by the scale.
  std::vector<float> dpred{1.f, -0.5f};
  scaler.scale_gradient(dpred.data(), dpred.size());
  CHECK(dpred == std::vector<float>{65536.f, -32768.f});

  // Finite gradients: divided by the scale, the step runs.
  compute::DeviceBuffer grads(*be, 3);
  const std::vector<float> scaled{65536.f, -32768.f, 6.5536f};
  be->upload(grads.data(), scaled.data(), 3, s);
  scaler.unscale_and_update(grads.data(), 3);
  CHECK(flag() == 0.f);
  std::vector<float> g(3);
  be->download(g.data(), grads.data(), 3, s);
  CHECK(g[0] == 1.f);
  CHECK(g[1] == -0.5f);
  CHECK(g[2] == Approx(1e-4f));
  CHECK(scaler.state().growth_tracker == 1);

  // One inf: the flag is set, the scale halves, the tracker restarts.
  const std::vector<float> bad{1.f, std::numeric_limits<float>::infinity(), 2.f};
  be->upload(grads.data(), bad.data(), 3, s);
  scaler.unscale_and_update(grads.data(), 3);
  CHECK(flag() == 1.f);
  CHECK(scaler.state().scale == 32768.f);
  CHECK(scaler.state().growth_tracker == 0);
  CHECK(scaler.skipped_steps() == 1);
  // NaN too.
  const std::vector<float> nan{std::numeric_limits<float>::quiet_NaN(), 0.f, 0.f};
  be->upload(grads.data(), nan.data(), 3, s);
  scaler.unscale_and_update(grads.data(), 3);
  CHECK(flag() == 1.f);
  CHECK(scaler.state().scale == 16384.f);

  // growth_interval consecutive finite steps double it; the flag is re-zeroed each step.
  for (int i = 0; i < 3; ++i) {
    be->upload(grads.data(), scaled.data(), 3, s);
    scaler.unscale_and_update(grads.data(), 3);
    CHECK(flag() == 0.f);
    CHECK(scaler.state().scale == (i < 2 ? 16384.f : 32768.f));
  }
  CHECK(scaler.state().growth_tracker == 0);
  CHECK(scaler.skipped_steps() == 2);
  // The next loss gradient gets the new scale.
  std::vector<float> later{1.f};
  scaler.scale_gradient(later.data(), 1);
  CHECK(later[0] == 32768.f);

  // State round trip (what a checkpoint stores).
  train::LossScaler other(*be, s);
  other.restore(scaler.state());
  CHECK(other.state().scale == 32768.f);
  CHECK(other.state().growth_tracker == 0);
}

TEST_CASE("16-mixed: the optimizer skips the flagged step and does not count it, on the device",
          "[train][precision]") {
  auto be = compute::make_cpu_backend(1, Precision::fp16);
  compute::Stream& s = be->default_stream();
  model::HeatmapModel net(*be, model::ModelSpec{"resnet18", 2, 2});
  net.initialize(0, s);
  train::Optimizer optimizer(net.store(), train::OptimizerConfig{});
  optimizer.set_group(model::ParamGroup::head, 1e-3, true);
  optimizer.set_steps(model::ParamGroup::head, 7, s);  // a resumed run's count
  train::LossScaler scaler(*be, s);
  auto& store = net.store();
  const auto head = store.group_range(model::ParamGroup::head);
  float* grads = store.grads_data() + head.offset;
  const auto params = [&] { return std::vector<float>(store.params_data(), store.params_data() + store.parameter_count()); };
  const auto step_with = [&](float gradient) {
    std::vector<float> g(head.count, gradient);
    be->upload(grads, g.data(), g.size(), s);
    scaler.unscale_and_update(grads, head.count);
    optimizer.step(s, scaler.skip_flag());
  };
  const auto before = params();
  step_with(std::numeric_limits<float>::infinity());
  CHECK(params() == before);
  CHECK(optimizer.steps(model::ParamGroup::head, s) == 7);
  step_with(65536.f);  // 1 after unscaling
  CHECK(params() != before);
  CHECK(optimizer.steps(model::ParamGroup::head, s) == 8);
  CHECK(optimizer.steps(model::ParamGroup::backbone, s) == 0);  // not active: never counted
  // A count set while the device holds them goes to the device.
  optimizer.set_steps(model::ParamGroup::head, 100, s);
  step_with(65536.f);
  CHECK(optimizer.steps(model::ParamGroup::head, s) == 101);
}
