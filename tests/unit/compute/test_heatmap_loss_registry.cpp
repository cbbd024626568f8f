// The heatmap loss registry is the one list of loss names (the config key and
// docs/CONFIG.md follow it: tests/unit/app/test_config_choices.cpp, test_config_files.cpp).
#include <catch2/catch.hpp>

#include <set>     // std::set
#include <string>  // std::string
#include <vector>  // std::vector

#include "compute/losses/heatmap_loss_registry.hpp"  // heatmap_losses, heatmap_loss_names, parse_heatmap_loss
#include "util/error.hpp"                            // UserError

using namespace trainer;

TEST_CASE("heatmap loss registry: unique names, each found by its name", "[compute][loss]") {
  const auto names = compute::heatmap_loss_names();
  REQUIRE(names.size() == compute::heatmap_losses().size());
  CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());
  for (const compute::HeatmapLoss* loss : compute::heatmap_losses()) {
    CHECK(&compute::parse_heatmap_loss(loss->name()) == loss);
  }
  // the losses of lightning-pose's model.heatmap_loss_type, in its order
  CHECK(names.size() >= 3);
  CHECK(std::vector<std::string>(names.begin(), names.begin() + 3) == std::vector<std::string>{"mse", "kl", "js"});
}

TEST_CASE("heatmap loss registry: an unknown name lists the registered ones", "[compute][loss]") {
  try {
    compute::parse_heatmap_loss("l2");
    FAIL("no error");
  } catch (const UserError& e) {
    CHECK(std::string(e.what()) == "unknown heatmap loss 'l2'");
    CHECK(e.hint() == "the heatmap losses are mse, kl, js");
    CHECK(e.exit_code() == kExitUsage);
  }
}
