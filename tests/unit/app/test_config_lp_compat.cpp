// Every config lightning-pose reads is read here: a model folder's config.yaml, the
// Lightning Trainer keys it passes on, keys of its earlier versions (each accepted,
// noted or refused by name), any matplotlib colormap, its backbone names, null
// interpolations; --print-config writes real YAML types and leaves the values as
// lightning-pose's files give them.
#include <catch2/catch.hpp>

#include <yaml-cpp/yaml.h>  // YAML::Load, for reading --print-config back

#include <algorithm>  // std::find
#include <string>
#include <vector>

#include "app/config_lp_backbones.hpp"  // lightning_pose_backbone_names
#include "app/config_lp_keys.hpp"       // key_for_yaml_path, find_lp_rule
#include "app/config_parse.hpp"         // config_to_yaml
#include "app/config_yaml.hpp"          // parse_yaml_leaves
#include "config_test_util.hpp"         // ScratchDir, CaptureStdout, parse, expect_user_error
#include "model/backbone_registry.hpp"  // backbone_names
#include "../text_file.hpp"             // read_text_file

using config_test::CaptureStdout;
using config_test::expect_user_error;
using config_test::parse;
using config_test::ScratchDir;
using trainer::testing::read_text_file;
using namespace trainer::app::config_detail;

namespace {

const std::string kConfigs = std::string(TRAINER_SOURCE_DIR) + "/tests/data/lightning-pose-configs/";

// config_default.yaml (v2.4.0) with a data path and `overrides`.
trainer::app::CommandLine with(const std::vector<std::string>& overrides, const std::string& file = "config_default.yaml") {
  std::vector<std::string> args = {kConfigs + file, "--overrides", "data.data_dir=/data/p"};
  args.insert(args.end(), overrides.begin(), overrides.end());
  return parse(args);
}

bool has_warning(const trainer::app::CommandLine& cl, const std::string& part) {
  for (const auto& w : cl.warnings)
    if (w.find(part) != std::string::npos) return true;
  return false;
}

// The YAML --print-config writes for `args`.
YAML::Node printed(std::vector<std::string> args) {
  args.push_back("--print-config");
  CaptureStdout out;
  parse(args);
  return YAML::Load(out.text());
}

// The node at a dotted path, or an invalid node. (reset(), not =: yaml-cpp's = would
// overwrite the node it walks from.)
YAML::Node at_path(const YAML::Node& root, const std::string& path) {
  YAML::Node node;
  node.reset(root);
  std::size_t start = 0;
  while (node.IsDefined() && node.IsMap()) {
    const std::size_t dot = path.find('.', start);
    const YAML::Node next = node[path.substr(start, dot == std::string::npos ? std::string::npos : dot - start)];
    if (!next.IsDefined()) return YAML::Node(YAML::NodeType::Undefined);
    node.reset(next);
    if (dot == std::string::npos) return node;
    start = dot + 1;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

// The YAML without its comment lines (the header names the source file).
std::string without_comments(const std::string& text) {
  std::string out;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    if (text[at] != '#') out += text.substr(at, end - at) + "\n";
    at = end + 1;
  }
  return out;
}

// Numbers equal as numbers (0.90 and 0.9), text as text, lists item by item, and a
// list of one number as that number (losses.temporal.epsilon: [20] or 20).
bool same_value(const YAML::Node& a, const YAML::Node& b) {
  if (a.IsSequence() && b.IsSequence()) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same_value(a[i], b[i])) return false;
    return true;
  }
  if (a.IsSequence() && a.size() == 1) return same_value(a[0], b);
  if (!a.IsScalar() || !b.IsScalar()) return false;
  double x = 0, y = 0;
  if (YAML::convert<double>::decode(a, x) && YAML::convert<double>::decode(b, y)) return x == y;
  return a.Scalar() == b.Scalar();
}

}  // namespace

TEST_CASE("a lightning-pose model folder's config.yaml is read as the config it was made from",
          "[app][config][yaml][lp-compat]") {
  const auto folder = parse({kConfigs + "model_folder_config.yaml"});
  CHECK(folder.warnings.empty());  // model.lightning_pose_version and creation_datetime: metadata, no note
  CHECK(folder.config.data.data_dir == "/home/user/lightning-pose/data/mirror-mouse-example");
  const std::vector<std::string> same_data = {"--overrides", "data.data_dir=/home/user/lightning-pose/data/mirror-mouse-example"};
  std::vector<std::string> args = {kConfigs + "config_mirror-mouse-example.yaml"};
  args.insert(args.end(), same_data.begin(), same_data.end());
  const auto source = parse(args);
  CHECK(without_comments(trainer::app::config_to_yaml(folder.config)) ==
        without_comments(trainer::app::config_to_yaml(source.config)));
  CHECK(find_lp_rule("model.lightning_pose_version") != nullptr);
  CHECK(find_lp_rule("creation_datetime") != nullptr);
}

TEST_CASE("Lightning Trainer keys: used with Lightning's meaning, bad values refused by name",
          "[app][config][yaml][lp-compat]") {
  // Accepted with no note: the value is what the trainer does.
  for (const char* ok : {"training.accumulate_grad_batches=1", "training.accumulate_grad_batches=null",
                         "training.accumulate_grad_batches=4", "training.val_check_interval=1.0",
                         "training.val_check_interval=null", "training.val_check_interval=0.25",
                         "training.val_check_interval=50", "training.limit_train_batches=null",
                         "training.limit_train_batches=10", "training.limit_train_batches=0.5",
                         "training.profiler=null", "data.camera_params_file=null", "training.ckpt_every_n_epochs=null",
                         "training.ckpt_every_n_epochs=5"}) {
    INFO(ok);
    const auto cl = with({ok});
    CHECK(cl.warnings.empty());
  }
  CHECK(with({"training.ckpt_every_n_epochs=5"}).config.training.ckpt_every_n_epochs == 5);
  CHECK(with({"training.accumulate_grad_batches=4"}).config.training.accumulate_grad_batches == 4);
  CHECK(with({"training.accumulate_grad_batches=null"}).config.training.accumulate_grad_batches == 1);
  // Lightning's int/float distinction survives: 1 is one batch, 1.0 the whole epoch.
  CHECK(with({"training.val_check_interval=1"}).config.training.val_check_interval == "1");
  CHECK(with({"training.val_check_interval=1.0"}).config.training.val_check_interval == "1.0");
  CHECK(with({"training.val_check_interval=3.0"}).config.training.val_check_interval == "3");
  CHECK(with({"training.limit_train_batches=null"}).config.training.limit_train_batches.empty());
  CHECK(with({"training.limit_train_batches=0.5"}).config.training.limit_train_batches == "0.5");
  // Accepted with a note: no effect.
  CHECK(has_warning(with({"training.profiler=simple"}), "training.profiler = simple: the trainer has no Lightning profiler"));
  // Values Lightning refuses too, by name.
  expect_user_error([] { with({"training.accumulate_grad_batches=0"}); }, {"training.accumulate_grad_batches"},
                    "training.accumulate_grad_batches");
  for (const char* value : {"1.5", "-1", "often"}) {
    INFO(value);
    expect_user_error([value] { with({std::string("training.val_check_interval=") + value}); },
                      {"training.val_check_interval", "fraction of the epoch"}, "training.val_check_interval");
    expect_user_error([value] { with({std::string("training.limit_train_batches=") + value}); },
                      {"training.limit_train_batches", "fraction of the epoch"}, "training.limit_train_batches");
  }
  expect_user_error([] { with({"data.camera_params_file=/p/calibrations.csv"}); },
                    {"data.camera_params_file", "multiview"}, "train one view per run");
  // In a file, the error names file:line.
  ScratchDir dir;
  const std::string file = dir.write("c.yaml", "training:\n  max_epochs: 3\n  accumulate_grad_batches: 0\n");
  expect_user_error([&] { parse({file}); }, {"c.yaml:3", "training.accumulate_grad_batches"});
}

TEST_CASE("keys of lightning-pose 1.x configs: accepted, renamed or refused by name", "[app][config][yaml][lp-compat]") {
  for (const char* file : {"config_default_v1.0.0.yaml", "config_default_v1.5.1.yaml"}) {
    INFO(file);
    const auto cl = with({}, file);
    CHECK(cl.warnings.empty());  // gpu_id 0, image_orig_dims, fiftyone, dynamic_crop false, ...: no effect then either
    CHECK(cl.config.training.max_epochs == (std::string(file) == "config_default_v1.0.0.yaml" ? 750 : 300));
    for (const auto& leaf : parse_yaml_leaves(read_text_file(kConfigs + file), file)) {
      INFO(leaf.where << ": " << leaf.path);
      CHECK((key_for_yaml_path(leaf.path) != nullptr || find_lp_rule(leaf.path) != nullptr));
    }
  }
  // Refused when the value asks for something lightning-pose itself dropped.
  expect_user_error([] { with({"+model.do_context=true"}); }, {"model.do_context = true", "#112"},
                    "model.model_type: heatmap_mhcrnn");
  CHECK_NOTHROW(with({"+model.do_context=true", "model.model_type=heatmap_mhcrnn"}));
  CHECK_NOTHROW(with({"+model.do_context=false"}));
  expect_user_error([] { with({"+model.learn_weights=true"}); }, {"model.learn_weights = true"}, "log_weight");
  expect_user_error([] { with({"+data.dynamic_crop=true"}); }, {"data.dynamic_crop = true", "dynamic crop"});
  expect_user_error([] { with({"+data.num_max_instances=2"}); }, {"data.num_max_instances = 2", "one animal"});
  expect_user_error([] { with({"+dali.context.train.consecutive_sequences=false"}); },
                    {"consecutive_sequences = false", "consecutive sequences only"});
  expect_user_error([] { with({"+data.header_rows=[1, 2]"}); }, {"data.header_rows", "three header rows"});
  CHECK_NOTHROW(with({"+data.header_rows=[0, 1, 2]"}));
  // Accepted with a note where the old value would have changed something.
  CHECK(has_warning(with({"+training.gpu_id=2"}), "training.gpu_id = 2"));
  CHECK(with({"+training.gpu_id=0"}).warnings.empty());
  // Renamed: lightning-pose's app wrote data.keypoints; data.keypoint_names wins when both are there.
  ScratchDir dir;
  const auto renamed_cl = parse({dir.write("k.yaml", "data:\n  keypoints: [nose, tail]\n")});
  CHECK(renamed_cl.config.data.keypoint_names == std::vector<std::string>{"nose", "tail"});
  const auto both = parse({dir.write("b.yaml", "data:\n  keypoints: [nose]\n  keypoint_names: [ear, eye]\n")});
  CHECK(both.config.data.keypoint_names == std::vector<std::string>{"ear", "eye"});
  // model.backbone_pretrained: false is random weights, which a weights file contradicts.
  CHECK_NOTHROW(with({"+model.backbone_pretrained=false"}));
  expect_user_error([] { with({"+model.backbone_pretrained=false", "+model.backbone_weights=/w.pth"}); },
                    {"model.backbone_pretrained = false"}, "remove one of");
}

TEST_CASE("a misspelled lightning-pose key still names the closest key", "[app][config][yaml][lp-compat]") {
  expect_user_error([] { with({"training.accumulate_grad_batchs=2"}); },
                    {"unknown key 'training.accumulate_grad_batchs'"}, "did you mean 'training.accumulate_grad_batches'");
  expect_user_error([] { with({"+model.lightning_pose_versoin=2.4.0"}); }, {"unknown key"},
                    "did you mean 'model.lightning_pose_version'");
  expect_user_error([] { with({"+data.image_orig_dim.height=10"}); }, {"unknown key 'data.image_orig_dim.height'"},
                    "did you mean");
}

TEST_CASE("eval.colormap: any matplotlib name; one the renderer lacks falls back with a note",
          "[app][config][yaml][lp-compat]") {
  const auto viridis = with({"eval.colormap=viridis"});
  CHECK(viridis.config.eval.colormap == "cool");  // lightning-pose's default
  CHECK(has_warning(viridis, "eval.colormap = viridis: the labeled-video renderer has no colormap 'viridis'; it "
                             "draws with 'cool'"));
  const auto reversed = with({"eval.colormap=gray_r"});  // the nearest it has
  CHECK(reversed.config.eval.colormap == "gray");
  CHECK(has_warning(reversed, "'gray'"));
  const auto spring = with({"eval.colormap=Spring"});
  CHECK(spring.config.eval.colormap == "spring");
  CHECK(spring.warnings.empty());
  // The INI file and the command line take it the same way.
  const auto cli = parse({"--eval.colormap", "RdBu"});
  CHECK(cli.config.eval.colormap == "cool");
  CHECK(has_warning(cli, "the command line (--eval.colormap): eval.colormap = RdBu"));
  ScratchDir dir;
  const auto ini = parse({"--config", dir.write("c.cfg", "[eval]\ncolormap = plasma\n")});
  CHECK(has_warning(ini, "c.cfg:2: eval.colormap = plasma"));
  expect_user_error([] { parse({"--eval.colormap", ""}); }, {"eval.colormap"});
}

TEST_CASE("model.backbone: a lightning-pose backbone this build lacks is refused as such",
          "[app][config][yaml][lp-compat]") {
  const auto& ours = trainer::model::backbone_names();
  int refused = 0;
  for (const auto& name : lightning_pose_backbone_names()) {
    INFO(name);
    if (std::find(ours.begin(), ours.end(), name) != ours.end()) {
      CHECK(with({"model.backbone=" + name}).config.model.backbone == name);
      continue;
    }
    // Only lightning-pose 1.x's names are left to refuse: 2.4's are all here.
    expect_user_error([&] { with({"model.backbone=" + name}); },
                      {"model.backbone: '" + name + "' is a lightning-pose 1.x backbone that lightning-pose 2 "},
                      "model.backbone is one of: " + ours.front());
    ++refused;
  }
  CHECK(refused == 3);
  // Every backbone this build has is one of lightning-pose's.
  for (const auto& name : ours) {
    const auto& lp = lightning_pose_backbone_names();
    CHECK(std::find(lp.begin(), lp.end(), name) != lp.end());
  }
  // On the command line and in an INI file too; a typo keeps its "did you mean".
  expect_user_error([] { parse({"--model.backbone", "ViT_B_SAM"}); },
                    {"'vit_b_sam' is a lightning-pose 1.x backbone that lightning-pose 2 calls vitb_sam"});
  expect_user_error([] { parse({"--model.backbone", "resnet181"}); }, {"got 'resnet181'"}, "");
}

TEST_CASE("an interpolation of a null key is null, as OmegaConf resolves it", "[app][config][yaml][lp-compat]") {
  // config_default.yaml: eval.test_videos_directory: ${data.video_dir}
  const auto cl = with({"data.video_dir=null"});
  CHECK(cl.config.data.video_dir.empty());
  CHECK(cl.config.eval.test_videos_directory.empty());
  // Through a chain of interpolations too; text around one still needs a value.
  ScratchDir dir;
  const auto chain = parse({dir.write("c.yaml", "data:\n  video_dir: null\n  csv_file: ${data.video_dir}\n"
                                                "eval:\n  test_videos_directory: ${data.csv_file}\n")});
  CHECK(chain.config.eval.test_videos_directory.empty());
  expect_user_error([&] { parse({dir.write("t.yaml", "data:\n  video_dir: null\neval:\n  test_videos_directory: "
                                                     "${data.video_dir}/more\n")}); },
                    {"${data.video_dir}"});
}

TEST_CASE("--print-config writes YAML types: numbers, booleans, null, sequences", "[app][config][yaml][lp-compat]") {
  const YAML::Node root = printed({kConfigs + "config_mirror-mouse-example.yaml", "--overrides",
                                   "data.data_dir=/data/p", "model.model_name=1"});
  const YAML::Node matches = at_path(root, "data.mirrored_column_matches");
  REQUIRE(matches.IsSequence());
  REQUIRE(matches.size() == 2);
  CHECK(matches[0].IsSequence());
  CHECK(matches[0][0].Tag() == "?");  // plain: a number
  CHECK(matches[1][0].as<int>() == 8);
  CHECK(at_path(root, "losses.pca_singleview.epsilon").IsNull());
  CHECK(at_path(root, "losses.pca_singleview.centering_method").IsNull());
  for (const char* number : {"training.max_epochs", "training.optimizer_params.learning_rate", "data.num_keypoints",
                             "losses.temporal.epsilon", "training.train_prob"}) {
    INFO(number);
    const YAML::Node n = at_path(root, number);
    REQUIRE(n.IsScalar());
    CHECK(n.Tag() == "?");
    CHECK_NOTHROW(n.as<double>());
  }
  const YAML::Node flag = at_path(root, "training.early_stopping");
  CHECK(flag.Tag() == "?");
  CHECK(flag.as<bool>() == false);
  CHECK(at_path(root, "eval.save_vids_after_training").as<bool>() == true);
  const YAML::Node milestones = at_path(root, "training.lr_scheduler_params.multisteplr.milestones");
  REQUIRE(milestones.IsSequence());
  CHECK(milestones[0].Tag() == "?");
  const YAML::Node names = at_path(root, "data.keypoint_names");
  REQUIRE(names.IsSequence());
  CHECK(names[0].as<std::string>() == "paw1LH_top");
  // Text that would read as a number, null or boolean stays a string.
  CHECK(at_path(root, "model.model_name").Tag() == "!");
  CHECK(at_path(root, "model.model_name").as<std::string>() == "1");
  CHECK(at_path(root, "model.backbone_weights").Tag() == "!");  // "" (empty)
  // Keys with one accepted value that lightning-pose still reads: its get_callbacks
  // passes callbacks.anneal_weight whole to AnnealWeight, which needs attr_name.
  CHECK(at_path(root, "callbacks.anneal_weight.attr_name").as<std::string>() == "total_unsupervised_importance");
  CHECK(at_path(root, "training.lr_scheduler").as<std::string>() == "multisteplr");
}

TEST_CASE("--print-config leaves every value of lightning-pose's configs as the file gives it",
          "[app][config][yaml][lp-compat]") {
  for (const char* file : {"config_default.yaml", "config_crim13.yaml", "config_ibl-paw.yaml", "config_ibl-pupil.yaml",
                           "config_mirror-fish.yaml", "config_mirror-mouse.yaml", "config_mirror-mouse-example.yaml",
                           "config_default_v1.0.0.yaml", "config_default_v1.5.1.yaml", "model_folder_config.yaml"}) {
    INFO(file);
    const YAML::Node root = printed({kConfigs + file, "--overrides", "data.data_dir=/data/p"});
    const YAML::Node source = YAML::Load(read_text_file(kConfigs + file));
    int compared = 0;
    for (const auto& leaf : parse_yaml_leaves(read_text_file(kConfigs + file), file)) {
      if (leaf.is_null || leaf.path == "data.data_dir" || leaf.value.find("${") != std::string::npos) continue;
      if (!key_for_yaml_path(leaf.path)) continue;  // a rule's key: not printed
      INFO(leaf.where << ": " << leaf.path);
      const YAML::Node in = at_path(source, leaf.path);
      const YAML::Node out = at_path(root, leaf.path);
      REQUIRE(out.IsDefined());
      CHECK(same_value(in, out));
      ++compared;
    }
    CHECK(compared > 20);
  }
}
