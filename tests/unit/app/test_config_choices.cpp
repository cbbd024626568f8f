// Each choice is declared once, by the layer that implements it: the key table takes
// the owner's names, and the owner's parse function accepts exactly those names and
// lists them when it refuses one.
#include <catch2/catch.hpp>

#include <functional>  // std::function
#include <string>      // std::string
#include <vector>      // std::vector

#include "app/config_keys.hpp"      // config_keys, find_key
#include "comm/nccl_debug.hpp"      // nccl_debug_names, parse_nccl_debug
#include "compute/losses/heatmap_loss_registry.hpp"  // heatmap_loss_names, parse_heatmap_loss
#include "compute/precision.hpp"    // precision_names, parse_precision, float32_matmul_precision_*
#include "data/augment.hpp"         // imgaug_names, parse_imgaug
#include "runtime/batch_plan.hpp"   // lr_scaling_names, parse_lr_scaling
#include "runtime/run_plan.hpp"     // accelerator_names, backend_names, resolve_*
#include "train/optimizer.hpp"      // optimizer_names, parse_optimizer
#include "util/error.hpp"           // UserError
#include "util/name_list.hpp"       // join_names

namespace {

using trainer::UserError;

struct Owned {
  std::string key;                                // "training.imgaug"
  std::vector<std::string> names;                 // as the owner exports them
  std::function<void(const std::string&)> parse;  // the owner's parse function
};

std::vector<Owned> owned_choices() {
  namespace rt = trainer::runtime;
  return {
      {"training.imgaug", trainer::data::imgaug_names(), [](const std::string& n) { trainer::data::parse_imgaug(n); }},
      {"training.optimizer", trainer::train::optimizer_names(),
       [](const std::string& n) { trainer::train::parse_optimizer(n); }},
      {"training.lr_scaling", rt::lr_scaling_names(), [](const std::string& n) { rt::parse_lr_scaling(n); }},
      {"model.heatmap_loss_type", trainer::compute::heatmap_loss_names(),
       [](const std::string& n) { trainer::compute::parse_heatmap_loss(n); }},
      {"model.precision", trainer::compute::precision_names(),
       [](const std::string& n) { trainer::compute::parse_precision(n); }},
      {"model.float32_matmul_precision", trainer::compute::float32_matmul_precision_names(),
       [](const std::string& n) { trainer::compute::parse_float32_matmul_precision(n); }},
      {"model.conv_algorithms", trainer::compute::conv_algorithms_names(),
       [](const std::string& n) { trainer::compute::parse_conv_algorithms(n); }},
      {"distributed.accelerator", rt::accelerator_names(),
       [](const std::string& n) { rt::resolve_accelerator(n, 1, false, nullptr); }},
      // Resolved for a GPU run, where every backend name is allowed.
      {"distributed.backend", rt::backend_names(), [](const std::string& n) { rt::resolve_backend(n, "gpu"); }},
      {"distributed.nccl_debug", trainer::comm::nccl_debug_names(),
       [](const std::string& n) { trainer::comm::parse_nccl_debug(n); }},
  };
}

}  // namespace

TEST_CASE("the key table takes each choice's names from its owning layer", "[app][config]") {
  for (const auto& owned : owned_choices()) {
    INFO(owned.key);
    const auto dot = owned.key.find('.');
    const auto* key = trainer::app::config_detail::find_key(owned.key.substr(0, dot), owned.key.substr(dot + 1));
    REQUIRE(key != nullptr);
    CHECK(key->choices == owned.names);
  }
}

TEST_CASE("each owner's parse function accepts exactly its names and lists them", "[app][config]") {
  for (const auto& owned : owned_choices()) {
    INFO(owned.key);
    REQUIRE(!owned.names.empty());
    for (const auto& name : owned.names) CHECK_NOTHROW(owned.parse(name));
    try {
      owned.parse("no-such-name");
      FAIL("accepted no-such-name");
    } catch (const UserError& e) {
      const std::string text = std::string(e.what()) + "\n" + e.hint();
      CHECK(text.find(trainer::join_names(owned.names)) != std::string::npos);
    }
  }
}

TEST_CASE("GPU convolutions default to auto: the graph API where built, else the legacy heuristics", "[app][config]") {
  // An H200 measured the graph API 1.57x the legacy calls on 2026-11-27 (docs/GPU.md).
  CHECK(trainer::Config{}.model.conv_algorithms == "auto");
  CHECK(trainer::compute::parse_conv_algorithms(trainer::Config{}.model.conv_algorithms) ==
        trainer::compute::ConvAlgorithms::automatic);
}
