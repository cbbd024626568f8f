// lightning-pose's YAML configs: every key of its example configs is read with its
// meaning or refused by name; Hydra overrides; interpolations; --print-config YAML
// round trip; errors are UserErrors (exit 2) naming file:line and the key.
#include <catch2/catch.hpp>

#include <algorithm>   // std::find
#include <cstdlib>     // setenv
#include <filesystem>  // std::filesystem::directory_iterator
#include <fstream>     // std::ifstream
#include <sstream>     // std::ostringstream
#include <string>
#include <vector>

#include "app/config_lp_keys.hpp"  // key_for_yaml_path, find_lp_rule, lp_key_rules
#include "app/config_parse.hpp"    // parse_command_line, config_to_ini, config_to_yaml
#include "app/config_yaml.hpp"     // parse_yaml_leaves, parse_override, is_yaml_config
#include "data/split.hpp"          // split_sizes_from_probabilities
#include "config_test_util.hpp"    // ScratchDir, CaptureStdout, parse, expect_user_error
#include "model/backbone_registry.hpp"  // backbone_names
#include "../text_file.hpp"  // read_text_file

#include <yaml-cpp/yaml.h>  // YAML::Load

using trainer::testing::read_text_file;
using config_test::expect_user_error;
using config_test::parse;
using config_test::ScratchDir;
using namespace trainer::app::config_detail;

namespace {

const std::string kConfigs = std::string(TRAINER_SOURCE_DIR) + "/tests/data/lightning-pose-configs/";

// The overrides a user of the mirror-mouse example gives: the data path (its
// ${LP_ROOT_PATH:} is lightning-pose's install folder) and no unsupervised loss;
// the backbone only while resnet50_animal_ap10k is not registered here.
std::vector<std::string> mirror_mouse_args() {
  std::vector<std::string> args = {kConfigs + "config_mirror-mouse-example.yaml", "--overrides",
                                   "data.data_dir=/data/mirror-mouse-example", "model.losses_to_use=[]"};
  const auto& names = trainer::model::backbone_names();
  if (std::find(names.begin(), names.end(), "resnet50_animal_ap10k") == names.end())
    args.push_back("model.backbone=resnet50");
  return args;
}

}  // namespace

TEST_CASE("every leaf key of lightning-pose's example configs is a key or a rule", "[app][config][yaml]") {
  int files = 0, leaves = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kConfigs)) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
    for (const auto& leaf : parse_yaml_leaves(read_text_file(entry.path().string()), entry.path().filename().string())) {
      INFO(leaf.where << ": " << leaf.path);
      CHECK((key_for_yaml_path(leaf.path) != nullptr || find_lp_rule(leaf.path) != nullptr));
      ++leaves;
    }
  }
  CHECK(files == 12);  // 9 of v2.4.0, 2 of v1.x, a model folder's (README.md)
  CHECK(leaves > 500);
}

TEST_CASE("docs/CONFIG.md lists every lightning-pose key the trainer knows", "[app][config][yaml][docs]") {
  const std::string doc = read_text_file(std::string(TRAINER_SOURCE_DIR) + "/docs/CONFIG.md");
  for (const auto& rule : lp_key_rules()) {
    INFO(rule.path);
    CHECK(doc.find("`" + rule.path + (rule.prefix ? ".*`" : "`")) != std::string::npos);
  }
  // And every leaf of config_default.yaml has a row.
  for (const auto& leaf : parse_yaml_leaves(read_text_file(kConfigs + "config_default.yaml"), "config_default.yaml")) {
    if (leaf.path.rfind("hydra.", 0) == 0) continue;  // one row for the section
    INFO(leaf.path);
    const bool row = doc.find("| `" + leaf.path + "` |") != std::string::npos;
    const LpKeyRule* rule = find_lp_rule(leaf.path);
    CHECK((row || (rule && rule->prefix)));
  }
}

TEST_CASE("lightning-pose's mirror-mouse example config is read with its meaning", "[app][config][yaml]") {
  const auto cl = parse(mirror_mouse_args());
  const trainer::Config& c = cl.config;
  CHECK(cl.yaml);
  CHECK(c.data.data_dir == "/data/mirror-mouse-example");
  CHECK(c.data.csv_file == "CollectedData.csv");
  CHECK(c.data.image_resize_height == 256);
  CHECK(c.data.image_resize_width == 256);
  CHECK(c.data.num_keypoints == 17);
  REQUIRE(c.data.keypoint_names.size() == 17);
  CHECK(c.data.keypoint_names.front() == "paw1LH_top");
  CHECK(c.data.keypoint_names.back() == "obsLow_bot");
  CHECK(c.training.imgaug == "dlc");
  CHECK(c.training.train_batch_size == 16);
  CHECK(c.training.val_batch_size == 16);
  CHECK(c.training.train_prob == 0.8);
  CHECK(c.training.val_prob == 0.1);
  CHECK(c.training.num_gpus == 1);
  CHECK(c.training.min_epochs == 300);
  CHECK(c.training.max_epochs == 300);
  CHECK(c.training.log_every_n_steps == 1);
  CHECK(c.training.check_val_every_n_epoch == 10);
  CHECK(c.training.rng_seed_data_pt == 42);
  CHECK(c.training.rng_seed_model_pt == 44);
  CHECK(c.training.learning_rate == 1e-3);
  CHECK(c.training.lr_scheduler_milestones == std::vector<int>{150, 200, 250});
  CHECK(c.training.lr_scheduler_gamma == 0.5);
  CHECK(c.training.context_batch_size == 6);  // dali.context.train.batch_size
  CHECK(c.model.model_type == "heatmap");
  CHECK(c.model.heatmap_loss_type == "mse");
  // lightning-pose defaults of keys the file does not set
  CHECK_FALSE(c.training.early_stopping);
  CHECK(c.training.uniform_heatmaps_for_nan_keypoints);
  // eval: videos predicted and labeled after training (${data.video_dir} resolved)
  CHECK(c.eval.predict_vids_after_training);
  CHECK(c.eval.save_vids_after_training);
  CHECK(c.eval.test_videos_directory.find("mirror-mouse-example/videos") != std::string::npos);
  CHECK(c.eval.confidence_thresh_for_vid == 0.9);
  CHECK(c.eval.colormap == "cool");
  CHECK(cl.warnings.empty());
}

TEST_CASE("the mirror-mouse config's unsupervised settings are read", "[app][config][yaml]") {
  auto args = mirror_mouse_args();
  args.erase(std::find(args.begin(), args.end(), "model.losses_to_use=[]"));
  const auto cl = parse(args);
  const trainer::Config& c = cl.config;
  CHECK(c.model.losses_to_use == std::vector<std::string>{"pca_singleview"});
  CHECK(c.data.video_dir == "/data/mirror-mouse-example/videos");
  REQUIRE(c.data.mirrored_column_matches.size() == 2);
  CHECK(c.data.mirrored_column_matches[0] == std::vector<int>{0, 1, 2, 3, 4, 5, 6});
  CHECK(c.data.mirrored_column_matches[1] == std::vector<int>{8, 9, 10, 11, 12, 13, 14});
  CHECK(c.data.columns_for_singleview_pca == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14});
  CHECK(c.losses.pca_singleview_log_weight == 10.7);
  CHECK(c.losses.pca_singleview_components_to_keep == "0.99");
  CHECK(c.losses.pca_singleview_epsilon < 0);  // null: empirical
  CHECK(c.losses.pca_multiview_components_to_keep == "3");
  CHECK(c.losses.temporal_epsilon == std::vector<double>{20.0});
  CHECK(c.losses.temporal_prob_threshold == 0.05);
  CHECK(c.losses.anneal_freeze_until_epoch == 0);
  CHECK(c.losses.anneal_increase_factor == 0.01);
  CHECK(c.training.unlabeled_sequence_length == 16);  // dali.base.train.sequence_length
  CHECK(c.eval.video_sequence_length == 64);          // dali.base.predict.sequence_length
  CHECK(c.eval.context_video_sequence_length == 64);  // dali.context.predict.sequence_length
  // Written back where lightning-pose's video prediction reads them (cfg.dali.*.predict).
  const YAML::Node written = YAML::Load(trainer::app::config_to_yaml(c));
  CHECK(written["dali"]["base"]["predict"]["sequence_length"].as<int>() == 64);
  CHECK(written["dali"]["context"]["predict"]["sequence_length"].as<int>() == 64);
  CHECK(written["dali"]["base"]["train"]["sequence_length"].as<int>() == 16);
  CHECK(c.losses.pca_singleview_centering_method.empty());  // absent: null, no centring
  args.push_back("losses.pca_singleview.centering_method=median");
  CHECK(parse(args).config.losses.pca_singleview_centering_method == "median");
  args.back() = "losses.pca_singleview.centering_method=null";
  CHECK(parse(args).config.losses.pca_singleview_centering_method.empty());
}

TEST_CASE("a YAML null means what lightning-pose's code makes of None", "[app][config][yaml]") {
  auto args = mirror_mouse_args();
  // val_prob: null: split_sizes_from_probabilities gives validation and test half of the rest each.
  args.push_back("training.val_prob=null");
  const auto c = parse(args).config;
  CHECK_FALSE(c.training.val_prob.has_value());
  const auto sizes = trainer::data::split_sizes_from_probabilities(1000, c.training.train_prob, c.training.val_prob);
  CHECK(sizes.train == 800);  // the mirror-mouse config's train_prob 0.8
  CHECK(sizes.val == 100);
  CHECK(sizes.test == 100);
  // uniform_heatmaps_for_nan_keypoints: null is falsy (cfg.training.get(..., False)).
  args.back() = "training.uniform_heatmaps_for_nan_keypoints=null";
  CHECK_FALSE(parse(args).config.training.uniform_heatmaps_for_nan_keypoints);
  // Written back as null, read back as null (a model folder's config.yaml, an INI file).
  args.back() = "training.val_prob=null";
  CHECK(trainer::app::config_to_yaml(parse(args).config).find("val_prob: null") != std::string::npos);
  CHECK_FALSE(parse({"--training.val_prob", "null"}).config.training.val_prob.has_value());
  CHECK(*parse({"--training.val_prob", "0.04"}).config.training.val_prob == 0.04);
}

TEST_CASE("unsupervised settings: bad values are errors naming the key", "[app][config][yaml]") {
  auto args = mirror_mouse_args();
  args.erase(std::find(args.begin(), args.end(), "model.losses_to_use=[]"));  // the file's [pca_singleview]
  auto with = [&](const std::string& override_text) {
    auto a = args;
    a.push_back(override_text);
    return a;
  };
  expect_user_error([&] { parse(with("model.losses_to_use=[temporal_heatmap_mse]")); },
                    {"model.losses_to_use", "temporal, pca_singleview, pca_multiview"});
  expect_user_error([&] { parse(with("model.losses_to_use=[pca_singelview]")); }, {"did you mean 'pca_singleview'"});
  expect_user_error([&] { parse(with("losses.pca_singleview.components_to_keep=1.5")); },
                    {"losses.pca_singleview.components_to_keep", "fraction of variance in (0, 1]"});
  expect_user_error([&] { parse(with("data.mirrored_column_matches=[[0, 1], [x]]")); },
                    {"data.mirrored_column_matches", "a list of lists of keypoint indices"});
  expect_user_error([&] { parse(with("callbacks.anneal_weight.attr_name=foo")); },
                    {"callbacks.anneal_weight.attr_name"});
  expect_user_error([&] { parse(with("losses.pca_singleview.centering_method=medain")); },
                    {"losses.pca_singleview.centering_method", "null or one of mean, median"});
  expect_user_error([&] { parse(with("losses.pca_multiview.centering_method=mean")); },
                    {"losses.pca_multiview.centering_method", "pca_singleview only"});
  expect_user_error([&] { parse(with("data.mirrored_column_matches=[0, 1, 2]")); },
                    {"data.mirrored_column_matches", "a list of lists of keypoint indices"});
  // pca_multiview without views, and no video_dir, are combinations of keys.
  auto multiview = with("model.losses_to_use=[pca_multiview]");
  multiview.push_back("data.mirrored_column_matches=null");
  expect_user_error([&] { parse(multiview); }, {"pca_multiview", "mirrored_column_matches"});
  expect_user_error([&] { parse(with("data.video_dir=null")); }, {"data.video_dir"});
}

TEST_CASE("unknown and misplaced YAML keys are errors naming the key", "[app][config][yaml]") {
  ScratchDir dir;
  expect_user_error([&] { parse({dir.write("a.yaml", "training:\n  trian_batch_size: 8\n")}); },
                    {"a.yaml:2", "unknown key 'training.trian_batch_size'"}, "did you mean 'training.train_batch_size'");
  expect_user_error([&] { parse({dir.write("b.yaml", "training:\n  backbone: resnet18\n")}); },
                    {"b.yaml:2", "unknown key 'training.backbone'"}, "model.backbone");
  expect_user_error([&] { parse({dir.write("c.yaml", "training:\n  imgaug:\n    Affine:\n      p: 0.5\n")}); },
                    {"c.yaml:4", "training.imgaug takes one value, not a section"}, "custom imgaug pipelines");
  expect_user_error([&] { parse({dir.write("d.yaml", "data:\n  csv_file: [top.csv, bot.csv]\n")}); },
                    {"d.yaml:2", "data.csv_file takes one value"}, "multiview");
  expect_user_error([&] { parse({dir.write("e.yaml", "training:\n  max_epochs: lots\n")}); },
                    {"e.yaml:2", "bad value for training.max_epochs"});
  // A bad value is reported under the key's name in the file, lightning-pose's nested one,
  // with the hint under that name too (not the trainer's own data.image_resize_height).
  expect_user_error([&] { parse({dir.write("g.yaml", "data:\n  image_resize_dims:\n    height: 100\n")}); },
                    {"g.yaml:3", "bad value for data.image_resize_dims.height: expected a multiple of 32"},
                    "data.image_resize_dims.height: network input height");
  expect_user_error([&] { parse({dir.write("h.yaml", "losses:\n  pca_singleview:\n    log_weight: abc\n")}); },
                    {"h.yaml:3", "bad value for losses.pca_singleview.log_weight"});
  // The same key under its lightning-pose name and its trainer name.
  expect_user_error([&] {
    parse({dir.write("f.yaml", "training:\n  learning_rate: 1e-3\n  optimizer_params:\n    learning_rate: 1e-4\n")});
  },
                    {"f.yaml:4", "training.optimizer_params.learning_rate sets training.learning_rate"});
  expect_user_error([&] { parse({dir.write("g.yaml", "training:\n  lr_scheduler: cosine\n")}); },
                    {"g.yaml:2", "only multisteplr"}, "multisteplr");
  // lightning-pose's model.checkpoint: the weights the run starts from (not refused any more).
  CHECK(parse({dir.write("h.yaml", "model:\n  checkpoint: /x/epoch=3.ckpt\n")}).config.model.checkpoint ==
        "/x/epoch=3.ckpt");
  CHECK(parse({dir.write("h2.yaml", "model:\n  checkpoint: null\n")}).config.model.checkpoint.empty());
  // model.backbone_checkpoint: vitb_imagenet's ViT-MAE file (was refused).
  CHECK(parse({dir.write("h3.yaml", "model:\n  backbone_checkpoint: /x/mae.safetensors\n")})
            .config.model.backbone_checkpoint == "/x/mae.safetensors");
  CHECK(parse({dir.write("h4.yaml", "model:\n  backbone_checkpoint: null\n")}).config.model.backbone_checkpoint.empty());
  expect_user_error([&] { parse({dir.write("dlc.yaml", "Task: mouse\nscorer: alice\nbodyparts:\n- nose\n")}); },
                    {"dlc.yaml is a DeepLabCut project's config.yaml"}, "trainer import --dlc-project");
}

TEST_CASE("malformed YAML is an error with its line", "[app][config][yaml]") {
  ScratchDir dir;
  expect_user_error([&] { parse({dir.write("bad.yaml", "training:\n  max_epochs: 10\n   - x: [1, 2\n")}); },
                    {"bad.yaml:", "not valid YAML"});
  expect_user_error([&] { parse({dir.write("list.yaml", "- a\n- b\n")}); }, {"list.yaml:1", "top level"});
  expect_user_error([&] { parse({dir.write("dup.yaml", "training:\n  max_epochs: 1\n  max_epochs: 2\n")}); },
                    {"dup.yaml:3", "training.max_epochs is set twice"});
  expect_user_error([&] { parse({dir.write("latin1.yaml", "data:\n  csv_file: caf\xe9.csv\n")}); },
                    {"latin1.yaml:2", "not UTF-8"}, "UTF-8");
  CHECK(parse({dir.write("utf8.yaml", "\xEF\xBB\xBF" "data:\n  csv_file: caf\xC3\xA9.csv\n")}).config.data.csv_file ==
        "caf\xC3\xA9.csv");  // a byte order mark and UTF-8 are fine
  // Empty sections set nothing; an empty section that does not exist is still unknown.
  CHECK(parse({dir.write("sections.yaml", "training:\nmodel: {}\nlosses:\ndata:\n  image_resize_dims:\n")})
            .config.training.max_epochs == 300);
  expect_user_error([&] { parse({dir.write("nosection.yaml", "trainning:\n")}); }, {"unknown key 'trainning'"});
  // An empty YAML file is every default.
  CHECK(parse({dir.write("empty.yaml", "# nothing\n")}).config.training.max_epochs == 300);
}

TEST_CASE("null keeps the default; lists, nested sections, numbers in YAML spellings", "[app][config][yaml]") {
  ScratchDir dir;
  const auto c = parse({dir.write("n.yaml",
                                  "data:\n  image_resize_dims:\n    height: ~\n    width: 384\n  keypoint_names: null\n"
                                  "  num_keypoints:\ntraining:\n  optimizer_params: {learning_rate: 5.0e-4}\n"
                                  "  lr_scheduler_params:\n    multisteplr:\n      milestones:\n        - 5\n"
                                  "        - 9\n  early_stopping: True\n  ckpt_every_n_epochs: null\n")})
                     .config;
  CHECK(c.data.image_resize_height == 256);
  CHECK(c.data.image_resize_width == 384);
  CHECK(c.data.keypoint_names.empty());
  CHECK(c.data.num_keypoints == 0);
  CHECK(c.training.learning_rate == 5e-4);
  CHECK(c.training.lr_scheduler_milestones == std::vector<int>{5, 9});
  CHECK(c.training.early_stopping);
}

TEST_CASE("Hydra overrides with dotted lightning-pose names", "[app][config][yaml]") {
  ScratchDir dir;
  const std::string file = dir.write("o.yaml", "training:\n  max_epochs: 300\nmodel:\n  backbone: resnet50\n");
  const auto c = parse({file, "--overrides", "training.max_epochs=10", "model.backbone=resnet18",
                        "training.lr_scheduler_params.multisteplr.milestones=[4, 8]", "+training.early_stopping=true",
                        "training.optimizer_params.learning_rate=2e-4"})
                     .config;
  CHECK(c.training.max_epochs == 10);
  CHECK(c.model.backbone == "resnet18");
  CHECK(c.training.lr_scheduler_milestones == std::vector<int>{4, 8});
  CHECK(c.training.early_stopping);
  CHECK(c.training.learning_rate == 2e-4);
  // --config FILE works the same; the trainer's own names too; --<section>.<key> wins over both.
  const auto d = parse({"--config", file, "--overrides", "distributed.backend=mpi", "training.max_epochs=7",
                        "--training.max_epochs", "5"})
                     .config;
  CHECK(d.distributed.backend == "mpi");
  CHECK(d.training.max_epochs == 5);
  // Overrides apply to INI configs and to no config at all.
  const std::string ini = dir.write("x.cfg", "[training]\nmax_epochs = 20\n");
  CHECK(parse({"--config", ini, "--overrides", "training.max_epochs=3"}).config.training.max_epochs == 3);
  CHECK(parse({"--overrides", "data.image_resize_dims.height=128"}).config.data.image_resize_height == 128);
  expect_user_error([&] { parse({file, "--overrides", "training.max_epochs"}); },
                    {"--overrides training.max_epochs", "key=value"});
  expect_user_error([&] { parse({file, "--overrides", "training.max_epoch=3"}); },
                    {"unknown key 'training.max_epoch'"}, "training.max_epochs");
  expect_user_error([&] { parse({file, "--config", file}); }, {"two config files"});
}

TEST_CASE("interpolations: ${key}, ${oc.env:NAME}; lightning-pose's resolvers are named", "[app][config][yaml]") {
  ScratchDir dir;
  const std::string file = dir.write(
      "i.yaml", "data:\n  data_dir: /a/b\n  csv_file: ${data.data_dir}/labels.csv\n  video_dir: ${data.data_dir}/v\n");
  CHECK(parse({file}).config.data.csv_file == "/a/b/labels.csv");
  // Interpolations see overrides, as OmegaConf resolves lazily.
  CHECK(parse({file, "--overrides", "data.data_dir=/c"}).config.data.csv_file == "/c/labels.csv");
  setenv("TRAINER_TEST_YAML_DIR", "/from/env", 1);
  CHECK(parse({dir.write("e.yaml", "data:\n  data_dir: ${oc.env:TRAINER_TEST_YAML_DIR}\n")}).config.data.data_dir ==
        "/from/env");
  CHECK(parse({dir.write("f.yaml", "data:\n  data_dir: ${oc.env:TRAINER_TEST_UNSET_VAR,/fallback}\n")})
            .config.data.data_dir == "/fallback");
  expect_user_error([&] { parse({dir.write("g.yaml", "data:\n  data_dir: ${LP_ROOT_PATH:}/data\n")}); },
                    {"g.yaml:2", "${LP_ROOT_PATH:}"}, "--overrides data.data_dir=");
  expect_user_error([&] { parse({dir.write("h.yaml", "data:\n  csv_file: ${data.nothing}/x.csv\n")}); },
                    {"h.yaml:2", "${data.nothing}"});
  expect_user_error([&] { parse({dir.write("j.yaml", "data:\n  data_dir: ${data.csv_file}\n  csv_file: ${data.data_dir}\n")}); },
                    {"loop"});
}

TEST_CASE("--print-config writes YAML after a YAML config, and it reads back the same", "[app][config][yaml]") {
  ScratchDir dir;
  std::string printed;
  {
    config_test::CaptureStdout capture;
    auto args = mirror_mouse_args();
    args.insert(args.end(), {"training.max_epochs=12", "--print-config"});
    const auto cl = parse(args);
    CHECK(cl.print_config);
    printed = capture.text();
  }
  CHECK(printed.find("optimizer_params:\n    learning_rate: 0.001") != std::string::npos);
  CHECK(printed.find("[training]") == std::string::npos);
  trainer::Config again = parse({dir.write("printed.yaml", printed)}).config;
  auto original_args = mirror_mouse_args();
  original_args.insert(original_args.end(), {"training.max_epochs=12"});
  trainer::Config original = parse(original_args).config;
  again.source_description = original.source_description = "";
  CHECK(trainer::app::config_to_ini(again) == trainer::app::config_to_ini(original));
  // An INI config still prints INI.
  config_test::CaptureStdout capture;
  parse({"--config", dir.write("x.cfg", "[training]\nmax_epochs = 20\n"), "--print-config"});
  CHECK(capture.text().find("[training]") != std::string::npos);
}

TEST_CASE("YAML or INI: by extension, else by the first line", "[app][config][yaml]") {
  CHECK(is_yaml_config("a.yaml", ""));
  CHECK(is_yaml_config("a.YML", ""));
  CHECK_FALSE(is_yaml_config("a.cfg", "data:\n"));
  CHECK(is_yaml_config("config", "# c\n\ndata:\n  x: 1\n"));
  CHECK_FALSE(is_yaml_config("config", "# c\n[data]\n"));
  CHECK_FALSE(is_yaml_config("config", "key = a:b\n"));
  ScratchDir dir;
  CHECK(parse({"--config", dir.write("noext", "training:\n  max_epochs: 4\n")}).config.training.max_epochs == 4);
}

TEST_CASE("lightning-pose defaults: no early stopping, min_epochs 300, uniform heatmaps", "[app][config][yaml]") {
  const trainer::Config c;
  CHECK_FALSE(c.training.early_stopping);
  CHECK(c.training.min_epochs == 300);
  CHECK(c.training.uniform_heatmaps_for_nan_keypoints);
  // min_epochs above max_epochs is fine (max_epochs ends the run), as in Lightning.
  CHECK(parse({"--training.max_epochs", "5"}).config.training.max_epochs == 5);
  CHECK(parse({"--overrides", "training.imgaug=dlc-top-down"}).config.training.imgaug == "dlc-top-down");
  CHECK(parse({"--overrides", "training.imgaug=none"}).config.training.imgaug == "none");
}

TEST_CASE("parse_override reads the value as YAML", "[app][config][yaml]") {
  CHECK(parse_override("a.b=null").is_null);
  CHECK(parse_override("a.b=").is_null);
  CHECK(parse_override("a.b=[1, 2]").is_list);
  CHECK(parse_override("a.b=[1, 2]").value == "[1, 2]");
  CHECK(parse_override("a.b='x y'").value == "x y");
  CHECK(parse_override("++a.b=3").path == "a.b");
  expect_user_error([] { parse_override("~a.b"); }, {"deleting a key"});
}

TEST_CASE("inputs/mirror-mouse.yaml (lightning-pose's file) and inputs/mirror-mouse.cfg configure the same run",
          "[app][config][yaml]") {
  trainer::Config yaml = parse({std::string(TRAINER_SOURCE_DIR) + "/inputs/mirror-mouse.yaml"}).config;
  trainer::Config ini = parse({"--config", std::string(TRAINER_SOURCE_DIR) + "/inputs/mirror-mouse.cfg"}).config;
  CHECK(yaml.data.data_dir == "../shared/data/mirror-mouse-example");
  CHECK(yaml.data.csv_file == "CollectedData.csv");
  // The data source differs by design (a CSV imported on first use vs an HDF5 file
  // imported by hand); so do num_gpus (the .cfg leaves it to the launcher) and the
  // source; everything else is the same run.
  for (trainer::Config* c : {&yaml, &ini}) {
    c->data.data_dir.clear();
    c->data.csv_file.clear();
    c->data.data_files.clear();
    c->training.num_gpus = 0;
    c->source_description.clear();
  }
  CHECK(trainer::app::config_to_ini(yaml) == trainer::app::config_to_ini(ini));
}
