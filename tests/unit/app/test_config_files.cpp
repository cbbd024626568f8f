// The shipped example configs parse, and docs/CONFIG.md lists every key with its
// real default, so neither can drift from the key table.
#include <catch2/catch.hpp>

#include <fstream>  // std::ifstream
#include <sstream>  // std::ostringstream

#include "app/config_keys.hpp"
#include "app/config_parse.hpp"
#include "config_test_util.hpp"

namespace {
std::string read_text(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}
}  // namespace

TEST_CASE("inputs/demo.cfg is the small synthetic demo", "[app][config]") {
  const auto cl = config_test::parse({"--config", std::string(TRAINER_SOURCE_DIR) + "/inputs/demo.cfg"});
  const trainer::Config& c = cl.config;
  CHECK(c.data.data_files.empty());  // synthetic data
  CHECK(c.data.image_resize_height == 128);
  CHECK(c.data.image_resize_width == 128);
  CHECK(c.model.backbone == "resnet18");
  CHECK(c.training.max_epochs <= 10);
  CHECK(c.training.train_batch_size % 2 == 0);  // splits evenly over the README's 2 ranks
}

TEST_CASE("inputs/mirror-mouse.cfg matches lightning-pose's mirror-mouse example", "[app][config]") {
  const auto cl = config_test::parse({"--config", std::string(TRAINER_SOURCE_DIR) + "/inputs/mirror-mouse.cfg"});
  const trainer::Config& c = cl.config;
  CHECK(c.data.num_keypoints == 17);
  REQUIRE(c.data.keypoint_names.size() == 17);
  CHECK(c.data.keypoint_names.front() == "paw1LH_top");
  CHECK(c.data.keypoint_names.back() == "obsLow_bot");
  CHECK(c.data.image_resize_height == 256);
  CHECK(c.data.image_resize_width == 256);
  CHECK(c.model.backbone == "resnet50");
  CHECK(c.training.imgaug == "dlc");
  CHECK(c.training.train_prob == Approx(0.8));
  CHECK(c.training.val_prob == Approx(0.1));
  CHECK(c.training.rng_seed_data_pt == 42);
  CHECK(c.training.rng_seed_model_pt == 44);
  CHECK(c.training.min_epochs == 300);
  CHECK(c.training.check_val_every_n_epoch == 10);
  CHECK(c.training.lr_scheduler_milestones == std::vector<int>{150, 200, 250});
  REQUIRE(c.data.data_files.size() == 1);
  CHECK(c.data.data_files[0].rfind("../shared/", 0) == 0);
}

TEST_CASE("docs/CONFIG.md lists every key with its default", "[app][config]") {
  const std::string doc = read_text(std::string(TRAINER_SOURCE_DIR) + "/docs/CONFIG.md");
  const trainer::Config defaults;
  for (const auto& key : trainer::app::config_detail::config_keys()) {
    const std::string value = key.get(defaults);
    const std::string row =
        "| `" + key.full_name() + "` | " + (value.empty() ? std::string("*(empty)*") : "`" + value + "`") + " |";
    INFO(row);
    CHECK(doc.find(row) != std::string::npos);
  }
}
