// Every error path of config parsing: each must be a UserError with exit code 2
// that names the key and where it came from (file:line or the command line),
// with a hint.
#include <catch2/catch.hpp>

#include "app/config_keys.hpp"
#include "app/config_parse.hpp"
#include "app/make_backend.hpp"  // cpu_precision_warning
#include "config_test_util.hpp"

using config_test::expect_user_error;
using config_test::parse;
using config_test::ScratchDir;

namespace {
// Parses a config file holding `text`; returns its path via `path`.
void parse_file(const ScratchDir& dir, const std::string& text, std::string* path = nullptr) {
  const std::string file = dir.write("bad.cfg", text);
  if (path) *path = file;
  parse({"--config", file});
}
}  // namespace

TEST_CASE("config file errors name file:line and hint at the fix", "[app][config]") {
  ScratchDir dir;
  const std::string f = dir.path() + "/bad.cfg";

  SECTION("missing file") {
    expect_user_error([&] { parse({"--config", dir.path() + "/nope.cfg"}); }, {"cannot read config file", "nope.cfg"},
                      "inputs/");
  }
  SECTION("a directory") {
    expect_user_error([&] { parse({"--config", dir.path()}); }, {"cannot read config file"}, "check the path");
  }
  SECTION("unknown section, with the closest one") {
    expect_user_error([&] { parse_file(dir, "[data]\n\n[trainng]\nmax_epochs = 3\n"); },
                      {f + ":3:", "unknown section [trainng]"}, "did you mean [training]?");
  }
  SECTION("unknown section, nothing close") {
    expect_user_error([&] { parse_file(dir, "[zzzzzzzzzz]\n"); }, {f + ":1:", "unknown section"},
                      "[data] [training] [model] [distributed]");
  }
  SECTION("key before any section") {
    expect_user_error([&] { parse_file(dir, "# c\nmax_epochs = 3\n"); }, {f + ":2:", "max_epochs", "before any"},
                      "under the [training] header");
  }
  SECTION("unknown key, with the closest valid key") {
    expect_user_error([&] { parse_file(dir, "[training]\nmax_epochs = 3\ntrian_batch_size = 8\n"); },
                      {f + ":3:", "unknown key 'trian_batch_size'", "[training]"}, "did you mean 'train_batch_size'?");
  }
  SECTION("key in the wrong section") {
    expect_user_error([&] { parse_file(dir, "[training]\nbackbone = resnet18\n"); },
                      {f + ":2:", "unknown key 'backbone'"}, "belongs in section [model]");
  }
  SECTION("unknown key, nothing close") {
    expect_user_error([&] { parse_file(dir, "[model]\ncompletely_different_thing = 1\n"); },
                      {f + ":2:", "unknown key"}, "--help");
  }
  SECTION("key set twice") {
    expect_user_error([&] { parse_file(dir, "[training]\nmax_epochs = 3\n\nmax_epochs = 4\n"); },
                      {f + ":4:", "training.max_epochs is set twice", "first at " + f + ":2"}, "keep one");
  }
  SECTION("alias and key both set") {
    expect_user_error([&] { parse_file(dir, "[data]\nimage_resize_height = 64\nimage_resize_dims.height = 64\n"); },
                      {f + ":3:", "data.image_resize_height is set twice"}, "keep one");
  }
  SECTION("YAML instead of INI") {
    expect_user_error([&] { parse_file(dir, "[training]\nmax_epochs: 3\n"); },
                      {f + ":2:", "expected 'key = value'"}, "name the file .yaml");
  }
  SECTION("line that is no assignment") {
    expect_user_error([&] { parse_file(dir, "[training]\nmax_epochs\n"); }, {f + ":2:", "expected 'key = value'"},
                      "one 'key = value' per line");
  }
  SECTION("unclosed section header") {
    expect_user_error([&] { parse_file(dir, "[training\n"); }, {f + ":1:", "closing ']'"}, "[training]");
  }
  SECTION("empty section name") {
    expect_user_error([&] { parse_file(dir, "[]\n"); }, {f + ":1:", "empty section name"}, "[data]");
  }
  SECTION("invalid key text") {
    expect_user_error([&] { parse_file(dir, "[training]\nmax epochs = 3\n"); },
                      {f + ":2:", "'max epochs' is not a valid key name"}, "train_batch_size = 16");
  }
  SECTION("empty key") {
    expect_user_error([&] { parse_file(dir, "[training]\n= 3\n"); }, {f + ":2:", "not a valid key name"}, "keys");
  }
}

TEST_CASE("malformed values name the key, the location and what was expected", "[app][config]") {
  ScratchDir dir;
  const std::string f = dir.path() + "/bad.cfg";
  struct Case {
    std::string section, line, key, expected;
  };
  const std::vector<Case> cases = {
      {"training", "train_batch_size = 16x", "training.train_batch_size", "a whole number, got '16x'"},
      {"training", "train_batch_size =", "training.train_batch_size", "got an empty value"},
      {"training", "train_batch_size = 0", "training.train_batch_size", ">= 1, got 0"},
      {"training", "val_batch_size = -4", "training.val_batch_size", ">= 1, got -4"},
      {"training", "test_batch_size = 99999999999999999999", "training.test_batch_size", "in range"},
      {"training", "context_batch_size = 0", "training.context_batch_size", ">= 1"},
      {"training", "train_batch_size = 1.5", "training.train_batch_size", "a whole number"},
      {"training", "train_prob = 0", "training.train_prob", "> 0 and <= 1"},
      {"training", "val_prob = 1.5", "training.val_prob", "> 0 and <= 1, or null, got 1.5"},
      {"training", "val_prob = nan", "training.val_prob", "a number, got 'nan'"},
      {"training", "learning_rate = fast", "training.learning_rate", "a number, got 'fast'"},
      {"training", "learning_rate = 0", "training.learning_rate", "> 0"},
      {"training", "lr_scheduler_gamma = 2", "training.lr_scheduler_gamma", "<= 1"},
      {"training", "weight_decay = -1", "training.weight_decay", ">= 0"},
      {"training", "rng_seed_data_pt = -1", "training.rng_seed_data_pt", "non-negative"},
      {"training", "rng_seed_model_pt = 1.0", "training.rng_seed_model_pt", "non-negative whole number"},
      {"training", "num_workers = -2", "training.num_workers", "from -1 to 256"},
      {"training", "num_gpus = -1", "training.num_gpus", ">= 0"},
      {"training", "max_epochs = 0", "training.max_epochs", ">= 1"},
      {"training", "max_steps = -5", "training.max_steps", ">= -1"},
      {"training", "log_every_n_steps = 0", "training.log_every_n_steps", ">= 1"},
      {"training", "check_val_every_n_epoch = 0", "training.check_val_every_n_epoch", ">= 1"},
      {"training", "early_stop_patience = 0", "training.early_stop_patience", ">= 1"},
      {"training", "unfreezing_epoch = -1", "training.unfreezing_epoch", ">= 0"},
      {"training", "reference_batch_size = 0", "training.reference_batch_size", ">= 1"},
      {"training", "imgaug = heavy", "training.imgaug", "one of default, none, dlc, dlc-lr, dlc-top-down; got 'heavy'"},
      {"training", "optimizer = SGD", "training.optimizer", "one of Adam, AdamW"},
      {"training", "lr_scaling = cubic", "training.lr_scaling", "one of none, linear, sqrt"},
      {"training", "drop_last = maybe", "training.drop_last", "true or false, got 'maybe'"},
      {"training", "lr_scheduler_milestones = [10, x]", "training.lr_scheduler_milestones", "list of whole numbers"},
      {"training", "lr_scheduler_milestones = [10, 0]", "training.lr_scheduler_milestones", ">= 1, got 0"},
      {"data", "data_files = [a.h5, b.h5", "data.data_files", "missing ']'"},
      {"data", "data_files = a.h5, b.h5]", "data.data_files", "missing '['"},
      {"data", "data_files = a.h5,,b.h5", "data.data_files", "without empty elements"},
      {"data", "data_files = \"a.h5, b.h5", "data.data_files", "balanced quotes"},
      {"data", "image_resize_height = 100", "data.image_resize_height", "multiple of 32 (what every backbone takes: the convolutional ones downsample by 32), got 100; nearest: 96 or 128"},
      {"data", "image_resize_width = 250", "data.image_resize_width", "multiple of 32"},
      {"data", "image_resize_width = 0", "data.image_resize_width", "from 32 to 4096"},
      {"data", "downsample_factor = 4", "data.downsample_factor", "from 1 to 3, got 4"},
      {"data", "downsample_factor = 0", "data.downsample_factor", "from 1 to 3, got 0"},
      {"data", "num_keypoints = -3", "data.num_keypoints", "from 0 to 1000"},
      {"model", "backbone = resnet51", "model.backbone", "did you mean 'resnet50'?"},
      {"model", "model_type = transformer", "model.model_type", "one of heatmap, heatmap_mhcrnn"},
      {"model", "heatmap_loss_type = l2", "model.heatmap_loss_type", "one of mse, kl, js"},
      {"model", "precision = 64", "model.precision", "one of 32, bf16-mixed, 16-mixed"},
      {"model", "float32_matmul_precision = medium", "model.float32_matmul_precision", "one of highest, high"},
      {"model", "conv_algorithms = fastest", "model.conv_algorithms", "one of auto, heuristics, benchmark, graph, graph-autotune, autotune"},
      {"distributed", "backend = ncl", "distributed.backend", "did you mean 'nccl'?"},
      {"distributed", "accelerator = tpu", "distributed.accelerator", "one of auto, cpu, gpu"},
      {"distributed", "num_nodes = -1", "distributed.num_nodes", ">= 0"},
      {"distributed", "broadcast_buffers = 2", "distributed.broadcast_buffers", "true or false"},
      {"distributed", "sync_batchnorm = yess", "distributed.sync_batchnorm", "true or false"},
      {"distributed", "manual_gradient_reduction = t", "distributed.manual_gradient_reduction", "true or false"},
      {"distributed", "bucket_cap_mb = 0", "distributed.bucket_cap_mb", "> 0"},
      {"distributed", "first_bucket_mb = -1", "distributed.first_bucket_mb", "> 0"},
      {"distributed", "nccl_debug = LOUD", "distributed.nccl_debug", "one of (empty), VERSION, WARN, INFO, TRACE"},
      {"distributed", "nccl_socket_nthreads = 17", "distributed.nccl_socket_nthreads", "from 0 to 16, got 17"},
      {"distributed", "collective_timeout = 0", "distributed.collective_timeout", "> 0"},
  };
  for (const auto& c : cases) {
    INFO(c.line);
    expect_user_error([&] { parse_file(dir, "\n[" + c.section + "]\n" + c.line + "\n"); },
                      {f + ":3: bad value for " + c.key, "expected", c.expected}, "default:");
  }
}

TEST_CASE("malformed command-line values name the option", "[app][config]") {
  expect_user_error([] { parse({"--training.train_batch_size", "many"}); },
                    {"the command line (--training.train_batch_size)", "bad value for training.train_batch_size",
                     "got 'many'"},
                    "default: 16");
  expect_user_error([] { parse({"--backend", "tcp"}); },
                    {"the command line (--backend)", "bad value for distributed.backend"}, "default: auto");
  expect_user_error([] { parse({"--data.image_resize_dims.height=33"}); },
                    {"(--data.image_resize_dims.height)", "multiple of 32"}, "default: 256");
}

TEST_CASE("command-line syntax errors", "[app][config]") {
  SECTION("unknown option, with the closest valid one") {
    expect_user_error([] { parse({"--training.train_bach_size", "3"}); },
                      {"unknown option '--training.train_bach_size'"}, "did you mean '--training.train_batch_size'?");
  }
  SECTION("unknown option in --key=value form") {
    expect_user_error([] { parse({"--confg=x.cfg"}); }, {"unknown option '--confg'"}, "did you mean '--config'?");
  }
  SECTION("unknown option, nothing close") {
    expect_user_error([] { parse({"--zzzzzzzzzzzzzzzzz"}); }, {"unknown option"}, "--help");
  }
  SECTION("no abbreviations: a prefix is not an option") {
    expect_user_error([] { parse({"--training.max_epoch", "3"}); }, {"unknown option"}, "--training.max_epochs");
  }
  SECTION("stray positional argument") {
    expect_user_error([] { parse({"inputs/demo.cfg"}); }, {"unexpected argument 'inputs/demo.cfg'"}, "--name VALUE");
  }
  SECTION("missing value") {
    expect_user_error([] { parse({"--config"}); }, {"train:", "config"}, "--help");
    expect_user_error([] { parse({"--training.max_epochs"}); }, {"train:", "--training.max_epochs needs a value"},
                      "--training.max_epochs=VALUE");
    expect_user_error([] { parse({"--training.max_epochs="}); }, {"bad value for training.max_epochs", "empty value"},
                      "default: 300");
  }
  SECTION("same key twice") {
    expect_user_error([] { parse({"--training.max_epochs", "3", "--training.max_epochs", "4"}); },
                      {"train:", "training.max_epochs is given twice"}, "once");
    expect_user_error([] { parse({"--config", "a.cfg", "--config", "b.cfg"}); }, {"train:", "config"}, "--help");
  }
  SECTION("shortcut and full key both given") {
    expect_user_error([] { parse({"--backend", "mpi", "--distributed.backend", "gloo"}); },
                      {"distributed.backend is given twice", "--backend", "--distributed.backend"}, "once");
  }
  SECTION("alias and key both given") {
    expect_user_error([] { parse({"--data.image_resize_height", "64", "--data.image_resize_dims.height", "64"}); },
                      {"data.image_resize_height is given twice"}, "once");
  }
}

TEST_CASE("impossible combinations name every key involved and its origin", "[app][config]") {
  ScratchDir dir;
  const std::string f = dir.path() + "/bad.cfg";
  SECTION("train_prob + val_prob > 1") {
    CHECK_NOTHROW(parse_file(dir, "[training]\ntrain_prob = 0.95\nval_prob = 0.05\n"));  // exactly 1 is fine
    expect_user_error([&] { parse_file(dir, "[training]\ntrain_prob = 0.9\n"), parse({"--config", f, "--training.val_prob", "0.2"}); },
                      {"training.train_prob = 0.9 (from " + f + ":2)",
                       "training.val_prob = 0.2 (from the command line (--training.val_prob))", "more than 1"},
                      "training.train_prob 0.8");
  }
  SECTION("min_epochs > max_epochs is accepted: max_epochs ends the run, as in Lightning") {
    const auto c = parse({"--training.max_epochs", "5", "--training.min_epochs", "6"}).config;
    CHECK(c.training.min_epochs == 6);
    CHECK(c.training.max_epochs == 5);
  }
  SECTION("csv_file and data_files") {
    expect_user_error([&] { parse({"--data.csv_file", "a.csv", "--data.data_files", "b.h5"}); },
                      {"data.csv_file (from the command line", "data.data_files", "both set"}, "give one of them");
  }
  SECTION("milestones not increasing") {
    expect_user_error([&] { parse_file(dir, "[training]\nlr_scheduler_milestones = 20, 10\n"); },
                      {"training.lr_scheduler_milestones (from " + f + ":2)", "strictly increasing", "10 follows 20"},
                      "increasing order");
  }
  SECTION("weight decay with Adam") {
    expect_user_error([&] { parse({"--training.weight_decay", "0.1"}); },
                      {"training.weight_decay = 0.1", "training.optimizer = Adam (from the default)"},
                      "set training.optimizer to AdamW");
  }
  SECTION("keypoint names vs num_keypoints") {
    expect_user_error([&] { parse_file(dir, "[data]\nnum_keypoints = 3\nkeypoint_names = a, b\n"); },
                      {"data.keypoint_names (from " + f + ":3) lists 2 names", "data.num_keypoints = 3 (from " + f + ":2)"},
                      "data.num_keypoints to 0");
  }
  SECTION("duplicate keypoint names") {
    expect_user_error([&] { parse({"--data.keypoint_names", "nose, tail, nose"}); },
                      {"data.keypoint_names", "'nose' twice"}, "own name");
  }
  SECTION("nccl on cpu") {
    expect_user_error([&] { parse({"--accelerator", "cpu", "--backend", "nccl"}); },
                      {"distributed.backend = nccl (from the command line (--backend))", "accelerator = cpu"},
                      "mpi or gloo");
  }
  SECTION("a YAML config's keys are named as its file and overrides write them") {
    const std::string y = dir.write("lp.yaml", "training:\n  lr_scheduler_params:\n    multisteplr:\n"
                                               "      milestones: [20, 10]\n");
    expect_user_error([&] { parse({y}); },
                      {"training.lr_scheduler_params.multisteplr.milestones (from " + y + ":4)", "10 follows 20"},
                      "increasing order");
    const std::string v = dir.write("lp_losses.yaml", "model:\n  losses_to_use: [temporal]\n");
    expect_user_error([&] { parse({v}); }, {"model.losses_to_use (from " + v + ":2)", "data.video_dir is not set"},
                      "set data.video_dir to a folder");
    // A default is named in the file's layout; an INI file keeps the INI names.
    const std::string t = dir.write("eps2.yaml", "data:\n  num_keypoints: 3\n  video_dir: videos\nmodel:\n"
                                                 "  losses_to_use: [temporal]\n");
    expect_user_error([&] { parse({t, "--overrides", "losses.temporal.epsilon=[1,2]"}); },
                      {"losses.temporal.epsilon (from the command line", "lists 2 values for 3 keypoints"},
                      "one per keypoint");
    expect_user_error([&] { parse_file(dir, "[data]\nnum_keypoints = 3\nvideo_dir = v\n[model]\nlosses_to_use = temporal\n"
                                            "[losses]\ntemporal_epsilon = 1, 2\n"); },
                      {"losses.temporal_epsilon (from " + f + ":7)"}, "one per keypoint");
  }
  SECTION("num_gpus on cpu") {
    expect_user_error([&] { parse({"--accelerator", "cpu", "--training.num_gpus", "2"}); },
                      {"training.num_gpus = 2", "accelerator = cpu"}, "training.num_gpus to 0");
  }
}

TEST_CASE("every precision is accepted with every accelerator", "[app][config][precision]") {
  for (const char* accelerator : {"cpu", "gpu", "auto"})
    for (const char* precision : {"32", "bf16-mixed", "16-mixed"}) {
      INFO(accelerator << " " << precision);
      CHECK(parse({"--accelerator", accelerator, "--model.precision", precision}).config.model.precision == precision);
    }
  // On the CPU the mixed ones are emulated; the run says so once (rank 0).
  const std::string w = trainer::app::cpu_precision_warning("bf16-mixed");
  CHECK(w == "precision bf16-mixed on CPU emulates the 16-bit rounding of the GPU path in fp32: "
             "same numerics, no speed-up");
}

TEST_CASE("the key table is complete and consistent", "[app][config]") {
  using trainer::app::config_detail::config_keys;
  const trainer::Config defaults;
  for (const auto& key : config_keys()) {
    INFO(key.full_name());
    CHECK_FALSE(key.meaning.empty());
    CHECK_FALSE(key.value_name.empty());
    trainer::Config copy;
    CHECK_NOTHROW(key.set(copy, key.get(defaults)));  // every default is itself a valid value
    CHECK(key.get(copy) == key.get(defaults));
  }
  CHECK(config_keys().size() >= 45);
}
