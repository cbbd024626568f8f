// model.backbone and model.model_type take their choices from the model layer's
// registries, so --help, `plan`, the INI reader and docs/CONFIG.md cannot drift
// from what the model can build.
#include <catch2/catch.hpp>

#include <fstream>  // std::ifstream
#include <sstream>  // std::ostringstream
#include <string>
#include <vector>

#include "app/config_keys.hpp"
#include "compute/precision.hpp"  // conv_algorithms_names
#include "model/backbone_registry.hpp"
#include "model/make_model.hpp"

namespace {
std::string joined(const std::vector<std::string>& names, const std::string& separator) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : separator) + n;
  return out;
}
}  // namespace

TEST_CASE("model.backbone and model.model_type list the registries' names", "[app][config][backbone]") {
  using trainer::app::config_detail::find_key;
  const struct {
    const char* key;
    std::vector<std::string> names;
  } cases[] = {{"backbone", trainer::model::backbone_names()}, {"model_type", trainer::model::model_type_names()},
               {"conv_algorithms", trainer::compute::conv_algorithms_names()}};
  std::ifstream in(std::string(TRAINER_SOURCE_DIR) + "/docs/CONFIG.md");
  REQUIRE(in);
  std::ostringstream doc;
  doc << in.rdbuf();
  for (const auto& c : cases) {
    INFO(c.key);
    const auto* key = find_key("model", c.key);
    REQUIRE(key != nullptr);
    CHECK(key->value_name == joined(c.names, "|"));
    // docs/CONFIG.md's table escapes the | of markdown.
    CHECK(doc.str().find("| `model." + std::string(c.key) + "` | `") != std::string::npos);
    CHECK(doc.str().find("` | " + joined(c.names, "\\|") + " |") != std::string::npos);
    trainer::Config config;
    for (const auto& name : c.names) {
      key->set(config, name);
      CHECK(key->get(config) == name);
    }
  }
}
