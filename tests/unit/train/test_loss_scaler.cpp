// train::LossScaler: torch.cuda.amp.GradScaler's state machine (skip on inf/NaN,
// backoff, growth after N finite steps) and the unscale through the backend op.
#include <catch2/catch.hpp>

#include <cmath>   // std::isfinite
#include <limits>  // std::numeric_limits
#include <vector>  // std::vector

#include "compute/backend.hpp"
#include "train/loss_scaler.hpp"

using namespace trainer;
using trainer::compute::Precision;

TEST_CASE("loss scaler is off for 32 and bf16-mixed", "[train][precision]") {
  auto be = compute::make_cpu_backend(1);
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    train::LossScaler scaler(p);
    CHECK_FALSE(scaler.enabled());
    CHECK(scaler.scale() == 1.f);
    std::vector<float> g{1.f, std::numeric_limits<float>::infinity()};
    CHECK(scaler.unscale_and_check(*be, g.data(), g.size(), be->default_stream()));
    CHECK(g[0] == 1.f);  // untouched
    CHECK(scaler.skipped_steps() == 0);
  }
}

TEST_CASE("loss scaler for 16-mixed: unscale, skip on inf, backoff, growth", "[train][precision]") {
  auto be = compute::make_cpu_backend(1);
  compute::Stream& s = be->default_stream();
  train::LossScalerOptions o;
  o.growth_interval = 3;
  train::LossScaler scaler(Precision::fp16, o);
  REQUIRE(scaler.enabled());
  CHECK(scaler.scale() == 65536.f);

  // Finite gradients: divided by the scale, the step runs.
  compute::DeviceBuffer grads(*be, 3);
  const std::vector<float> scaled{65536.f, -32768.f, 6.5536f};
  be->upload(grads.data(), scaled.data(), 3, s);
  CHECK(scaler.unscale_and_check(*be, grads.data(), 3, s));
  std::vector<float> g(3);
  be->download(g.data(), grads.data(), 3, s);
  CHECK(g[0] == 1.f);
  CHECK(g[1] == -0.5f);
  CHECK(g[2] == Approx(1e-4f));
  CHECK(scaler.state().growth_tracker == 1);

  // One inf: the step is skipped, the scale halves, the tracker restarts.
  const std::vector<float> bad{1.f, std::numeric_limits<float>::infinity(), 2.f};
  be->upload(grads.data(), bad.data(), 3, s);
  CHECK_FALSE(scaler.unscale_and_check(*be, grads.data(), 3, s));
  CHECK(scaler.scale() == 32768.f);
  CHECK(scaler.state().growth_tracker == 0);
  CHECK(scaler.skipped_steps() == 1);
  // NaN too.
  const std::vector<float> nan{std::numeric_limits<float>::quiet_NaN(), 0.f, 0.f};
  be->upload(grads.data(), nan.data(), 3, s);
  CHECK_FALSE(scaler.unscale_and_check(*be, grads.data(), 3, s));
  CHECK(scaler.scale() == 16384.f);

  // growth_interval consecutive finite steps double it; the flag is re-zeroed each step.
  for (int i = 0; i < 3; ++i) {
    be->upload(grads.data(), scaled.data(), 3, s);
    CHECK(scaler.unscale_and_check(*be, grads.data(), 3, s));
    CHECK(scaler.scale() == (i < 2 ? 16384.f : 32768.f));
  }
  CHECK(scaler.state().growth_tracker == 0);
  CHECK(scaler.skipped_steps() == 2);
}

TEST_CASE("loss scaler update() follows GradScaler with its defaults", "[train][precision]") {
  train::LossScaler scaler(Precision::fp16);
  for (int i = 0; i < 1999; ++i) scaler.update(false);
  CHECK(scaler.scale() == 65536.f);
  CHECK(scaler.state().growth_tracker == 1999);
  scaler.update(false);
  CHECK(scaler.scale() == 131072.f);
  CHECK(scaler.state().growth_tracker == 0);
  scaler.update(true);
  scaler.update(true);
  CHECK(scaler.scale() == 32768.f);

  // Growth that would overflow keeps the scale finite (torch keeps the old one).
  train::LossScalerOptions o;
  o.growth_interval = 1;
  o.init_scale = std::numeric_limits<float>::max();
  train::LossScaler big(Precision::fp16, o);
  big.update(false);
  CHECK(big.scale() == std::numeric_limits<float>::max());

  // State round trip (what a checkpoint stores).
  train::LossScaler other(Precision::fp16);
  other.restore(scaler.state());
  CHECK(other.scale() == 32768.f);
  CHECK(other.state().growth_tracker == 0);
}
