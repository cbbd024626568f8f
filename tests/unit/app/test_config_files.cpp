// The shipped example configs parse, and docs/CONFIG.md lists every key with its
// real default and every NAME key with exactly the names the code accepts, so
// neither can drift from the key table.
#include <catch2/catch.hpp>

#include <fstream>  // std::ifstream
#include <sstream>  // std::ostringstream
#include <string>   // std::string
#include <vector>   // std::vector

#include "app/config_keys.hpp"
#include "app/config_parse.hpp"
#include "util/name_list.hpp"  // join_names
#include "config_test_util.hpp"
#include "../text_file.hpp"  // read_text_file

using trainer::testing::read_text_file;

namespace {
// The cells of one markdown table row "| a | b\\|c |" -> {"a", "b\\|c"}, trimmed; an
// escaped bar "\\|" stays inside its cell.
std::vector<std::string> table_cells(const std::string& row) {
  std::vector<std::string> cells;
  std::string cell;
  for (std::size_t i = 0; i < row.size(); ++i) {
    if (row[i] == '\\' && i + 1 < row.size() && row[i + 1] == '|') {
      cell += "\\|";
      ++i;
    } else if (row[i] == '|') {
      cells.push_back(cell);
      cell.clear();
    } else {
      cell += row[i];
    }
  }
  cells.push_back(cell);
  for (auto& c : cells) {
    const auto first = c.find_first_not_of(' ');
    c = first == std::string::npos ? "" : c.substr(first, c.find_last_not_of(' ') - first + 1);
  }
  // Drop what lies outside the first and last bar.
  if (cells.size() >= 2) cells = std::vector<std::string>(cells.begin() + 1, cells.end() - 1);
  return cells;
}

// The "values" cell of a NAME key, "a\\|b\\|(empty)", as the names {"a", "b", ""}.
std::vector<std::string> listed_names(const std::string& values) {
  std::vector<std::string> names;
  std::size_t start = 0;
  while (true) {
    const std::size_t bar = values.find("\\|", start);
    const std::string name = values.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
    names.push_back(name == "(empty)" ? "" : name);
    if (bar == std::string::npos) break;
    start = bar + 2;
  }
  return names;
}

// The row of `full_name` in docs/CONFIG.md's key tables, split into cells; empty when missing.
std::vector<std::string> doc_row(const std::string& doc, const std::string& full_name) {
  const std::string start = "| `" + full_name + "` |";
  const std::size_t at = doc.find("\n" + start);
  if (at == std::string::npos) return {};
  const std::size_t end = doc.find('\n', at + 1);
  return table_cells(doc.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1));
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
  CHECK(*c.training.val_prob == Approx(0.1));
  CHECK(c.training.rng_seed_data_pt == 42);
  CHECK(c.training.rng_seed_model_pt == 44);
  CHECK(c.training.min_epochs == 300);
  CHECK(c.training.check_val_every_n_epoch == 10);
  CHECK(c.training.lr_scheduler_milestones == std::vector<int>{150, 200, 250});
  REQUIRE(c.data.data_files.size() == 1);
  CHECK(c.data.data_files[0].rfind("../shared/", 0) == 0);
  // Semi-supervised like lightning-pose's example: pca_singleview on the example video.
  CHECK(c.model.losses_to_use == std::vector<std::string>{"pca_singleview"});
  CHECK(c.data.video_dir.rfind("../shared/", 0) == 0);
  CHECK(c.data.columns_for_singleview_pca.size() == 14);
  CHECK(c.losses.pca_singleview_log_weight == 10.7);
  CHECK(c.losses.anneal_freeze_until_epoch == 0);
}

TEST_CASE("docs/CONFIG.md lists every key with its default", "[app][config]") {
  const std::string doc = read_text_file(std::string(TRAINER_SOURCE_DIR) + "/docs/CONFIG.md");
  const trainer::Config defaults;
  for (const auto& key : trainer::app::config_detail::config_keys()) {
    const std::string value = key.get(defaults);
    const std::string row =
        "| `" + key.full_name() + "` | " + (value.empty() ? std::string("*(empty)*") : "`" + value + "`") + " |";
    INFO(row);
    CHECK(doc.find(row) != std::string::npos);
  }
}

// Reads the names through the key table, so a choice added or changed in any layer
// (loss, backbone, model type included) is checked without touching this test.
TEST_CASE("docs/CONFIG.md lists exactly the names every choice key accepts", "[app][config]") {
  const std::string doc = read_text_file(std::string(TRAINER_SOURCE_DIR) + "/docs/CONFIG.md");
  int choice_keys = 0;
  for (const auto& key : trainer::app::config_detail::config_keys()) {
    INFO(key.full_name());
    const auto cells = doc_row(doc, key.full_name());
    REQUIRE(cells.size() >= 3);  // key | default | values | ...
    const std::string& values = cells[2];
    if (key.choices.empty()) {
      // Only a NAME key may list names in the values column.
      CHECK(values.find("\\|") == std::string::npos);
      continue;
    }
    ++choice_keys;
    CHECK(listed_names(values) == key.choices);
    CHECK(key.value_name == trainer::join_names(key.choices, "|"));  // what --help shows
    // Every listed name is accepted by the key as it is written.
    for (const auto& name : key.choices) {
      trainer::Config config;
      key.set(config, name);
      CHECK(key.get(config) == name);
    }
  }
  CHECK(choice_keys >= 11);  // imgaug, optimizer, lr_scaling, model_type, backbone, heatmap_loss_type, ...
}
