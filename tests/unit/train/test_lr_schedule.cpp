// Learning-rate schedule: MultiStepLR for the head and lightning-pose's backbone
// unfreezing (BackboneFinetuning: 0.1x at the unfreezing epoch, x1.5 per epoch,
// capped at the head's lr).
#include <catch2/catch.hpp>

#include "train/lr_schedule.hpp"

using trainer::train::lr_for_epoch;
using trainer::train::LrScheduleConfig;

TEST_CASE("MultiStepLR: lr drops by gamma at each milestone epoch", "[train]") {
  LrScheduleConfig c;
  c.base_lr = 1e-3;
  c.milestones = {150, 200, 250};
  c.gamma = 0.5;
  c.unfreezing_epoch = 0;
  CHECK(lr_for_epoch(c, 0).head == Approx(1e-3));
  CHECK(lr_for_epoch(c, 149).head == Approx(1e-3));
  CHECK(lr_for_epoch(c, 150).head == Approx(5e-4));
  CHECK(lr_for_epoch(c, 199).head == Approx(5e-4));
  CHECK(lr_for_epoch(c, 200).head == Approx(2.5e-4));
  CHECK(lr_for_epoch(c, 299).head == Approx(1.25e-4));
}

TEST_CASE("backbone lr is 0 before the unfreezing epoch, then grows x1.5 up to the head lr", "[train]") {
  LrScheduleConfig c;
  c.base_lr = 1e-3;
  c.milestones = {};
  c.unfreezing_epoch = 20;
  for (int e = 0; e < 20; ++e) {
    const auto lr = lr_for_epoch(c, e);
    CHECK(lr.backbone == 0.0);
    CHECK(lr.head == Approx(1e-3));
  }
  CHECK(lr_for_epoch(c, 20).backbone == Approx(1e-4));
  CHECK(lr_for_epoch(c, 21).backbone == Approx(1.5e-4));
  CHECK(lr_for_epoch(c, 22).backbone == Approx(2.25e-4));
  // 1e-4 * 1.5^k passes 1e-3 at k = 6 (1.139e-3): aligned to the head from then on.
  CHECK(lr_for_epoch(c, 25).backbone == Approx(1e-4 * 1.5 * 1.5 * 1.5 * 1.5 * 1.5));
  CHECK(lr_for_epoch(c, 26).backbone == Approx(1e-3));
  CHECK(lr_for_epoch(c, 100).backbone == Approx(1e-3));
}

TEST_CASE("unfreezing at epoch 0 trains the backbone from the start at 0.1x", "[train]") {
  LrScheduleConfig c;
  c.base_lr = 2e-3;
  c.unfreezing_epoch = 0;
  CHECK(lr_for_epoch(c, 0).backbone == Approx(2e-4));
}

TEST_CASE("after a milestone the backbone is capped by the lowered head lr", "[train]") {
  LrScheduleConfig c;
  c.base_lr = 1e-3;
  c.milestones = {30};
  c.gamma = 0.1;
  c.unfreezing_epoch = 20;
  CHECK(lr_for_epoch(c, 29).backbone == Approx(1e-3));
  CHECK(lr_for_epoch(c, 30).head == Approx(1e-4));
  CHECK(lr_for_epoch(c, 30).backbone == Approx(1e-4));
}
