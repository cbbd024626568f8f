// Config file + command line: precedence, value syntax, help and --print-config.
#include <catch2/catch.hpp>

#include <cstdlib>  // setenv, unsetenv

#include "app/config_parse.hpp"
#include "config_test_util.hpp"

using config_test::CaptureStdout;
using config_test::parse;
using config_test::ScratchDir;

TEST_CASE("no arguments give the documented defaults", "[app][config]") {
  const auto cl = parse({});
  const trainer::Config defaults;
  CHECK_FALSE(cl.help);
  CHECK(cl.config.training.train_batch_size == defaults.training.train_batch_size);
  CHECK(cl.config.model.backbone == "resnet50");
  CHECK(cl.config.training.lr_scheduler_milestones == std::vector<int>{150, 200, 250});
  CHECK(cl.config.data.data_files.empty());
  CHECK(cl.config.source_description == "defaults");
  trainer::Config same = defaults;
  same.source_description = cl.config.source_description;
  CHECK(trainer::app::config_to_ini(cl.config) == trainer::app::config_to_ini(same));
}

TEST_CASE("config file overrides defaults and the command line overrides the file", "[app][config]") {
  ScratchDir dir;
  const std::string file = dir.write("run.cfg",
                                     "# a comment\n"
                                     "; another comment\n"
                                     "[data]\n"
                                     "image_resize_height = 128   # inline comment\n"
                                     "image_resize_width = 192\n"
                                     "[training]\n"
                                     "train_batch_size = 8\n"
                                     "val_batch_size = 12\n"
                                     "optimizer = adamw\n"
                                     "weight_decay = 0.01\n"
                                     "[model]\n"
                                     "backbone = resnet18\n"
                                     "[distributed]\n"
                                     "backend = gloo\n");
  const auto cl = parse({"--config", file, "--training.train_batch_size", "32", "--backend", "mpi",
                         "--model.heatmap_loss_type=kl"});
  CHECK(cl.config.data.image_resize_height == 128);       // file
  CHECK(cl.config.data.image_resize_width == 192);        // file
  CHECK(cl.config.training.train_batch_size == 32);       // command line beats file
  CHECK(cl.config.training.val_batch_size == 12);         // file
  CHECK(cl.config.training.optimizer == "AdamW");         // case-insensitive, stored canonically
  CHECK(cl.config.training.weight_decay == Approx(0.01));
  CHECK(cl.config.model.backbone == "resnet18");          // file
  CHECK(cl.config.model.heatmap_loss_type == "kl");       // --key=value form
  CHECK(cl.config.distributed.backend == "mpi");          // shortcut beats file
  CHECK(cl.config.training.max_epochs == 300);            // default
  CHECK(cl.config.source_description == file + " + command line");
}

TEST_CASE("lightning-pose spellings are accepted as aliases", "[app][config]") {
  ScratchDir dir;
  const std::string file = dir.write("lp.cfg",
                                     "[data]\n"
                                     "image_resize_dims.height = 384\n"
                                     "data_file = a.h5\n"
                                     "[training]\n"
                                     "optimizer_params.learning_rate = 0.0005\n"
                                     "lr_scheduler_params.multisteplr.milestones = [10, 20]\n"
                                     "lr_scheduler_params.multisteplr.gamma = 0.1\n");
  const auto cl = parse({"--config", file, "--data.image_resize_dims.width", "320"});
  CHECK(cl.config.data.image_resize_height == 384);
  CHECK(cl.config.data.image_resize_width == 320);
  CHECK(cl.config.data.data_files == std::vector<std::string>{"a.h5"});
  CHECK(cl.config.training.learning_rate == Approx(0.0005));
  CHECK(cl.config.training.lr_scheduler_milestones == std::vector<int>{10, 20});
  CHECK(cl.config.training.lr_scheduler_gamma == Approx(0.1));
}

TEST_CASE("lists are comma-separated or bracketed, elements may be quoted", "[app][config]") {
  ScratchDir dir;
  SECTION("plain commas") {
    const auto cl = parse({"--data.data_files", "a.h5, b.h5,c.h5"});
    CHECK(cl.config.data.data_files == std::vector<std::string>{"a.h5", "b.h5", "c.h5"});
  }
  SECTION("brackets and quotes") {
    const std::string file = dir.write("l.cfg",
                                       "[data]\n"
                                       "data_files = [\"x, y.h5\", 'z.h5']\n"
                                       "keypoint_names = [nose, paw_l, paw_r]\n"
                                       "num_keypoints = 3\n");
    const auto cl = parse({"--config", file});
    CHECK(cl.config.data.data_files == std::vector<std::string>{"x, y.h5", "z.h5"});
    CHECK(cl.config.data.keypoint_names == std::vector<std::string>{"nose", "paw_l", "paw_r"});
  }
  SECTION("empty lists") {
    const auto cl = parse({"--data.data_files", "[]", "--training.lr_scheduler_milestones="});
    CHECK(cl.config.data.data_files.empty());
    CHECK(cl.config.training.lr_scheduler_milestones.empty());
  }
  SECTION("integer list") {
    const auto cl = parse({"--training.lr_scheduler_milestones", "5,10"});
    CHECK(cl.config.training.lr_scheduler_milestones == std::vector<int>{5, 10});
  }
}

TEST_CASE("negative numbers, booleans, raw devices and CRLF files", "[app][config]") {
  ScratchDir dir;
  const std::string file = dir.write("crlf.cfg", "[distributed]\r\nsync_batchnorm = no\r\ndevices = [0, 1]\r\n");
  const auto cl = parse({"--config", file, "--training.max_steps", "-1", "--training.num_workers", "-1",
                         "--distributed.broadcast_buffers", "off", "--training.drop_last", "YES",
                         "--model.cuda_graphs", "false"});
  CHECK(cl.config.training.max_steps == -1);
  CHECK_FALSE(cl.config.model.cuda_graphs);
  CHECK(parse({}).config.model.cuda_graphs);  // on by default (one-GPU runs)
  CHECK(cl.config.training.num_workers == -1);
  CHECK_FALSE(cl.config.distributed.sync_batchnorm);
  CHECK_FALSE(cl.config.distributed.broadcast_buffers);
  CHECK(cl.config.training.drop_last);
  CHECK(cl.config.distributed.devices == "[0, 1]");  // kept raw for the runtime's devices parser
  const auto shortcut = parse({"--devices", "2", "--accelerator", "cpu"});
  CHECK(shortcut.config.distributed.devices == "2");
  CHECK(shortcut.config.distributed.accelerator == "cpu");
}

TEST_CASE("config_to_ini output parses back to the same configuration", "[app][config]") {
  ScratchDir dir;
  trainer::Config c;
  c.data.data_files = {"a b.h5", "with,comma.h5", "run#3.h5"};
  c.data.keypoint_names = {"nose", "tail"};
  c.data.num_keypoints = 2;
  c.data.synthetic_file = "out dir/#synthetic.h5";
  c.training.learning_rate = 0.1 + 0.2;  // not exactly representable: must round-trip anyway
  c.training.rng_seed_data_pt = 18446744073709551615ull;
  c.training.max_steps = 12345;
  c.training.optimizer = "AdamW";
  c.training.weight_decay = 1e-4;
  c.distributed.devices = "[0,1]";
  c.distributed.nccl_debug = "INFO";
  c.distributed.backend = "gloo";
  c.distributed.sync_batchnorm = false;
  const std::string ini = trainer::app::config_to_ini(c);
  const auto cl = parse({"--config", dir.write("saved.cfg", ini)});
  CHECK(cl.config.data.data_files == c.data.data_files);
  CHECK(cl.config.data.synthetic_file == c.data.synthetic_file);
  CHECK(cl.config.training.learning_rate == c.training.learning_rate);
  CHECK(cl.config.training.rng_seed_data_pt == c.training.rng_seed_data_pt);
  CHECK(cl.config.distributed.devices == "[0,1]");
  // Same text after a second round, modulo the header naming the source.
  auto body = [](const std::string& text) { return text.substr(text.find("\n[")); };
  CHECK(body(trainer::app::config_to_ini(cl.config)) == body(ini));
}

TEST_CASE("--help prints every option with its default and asks the caller to stop", "[app][config]") {
  boost::program_options::options_description own("train options");
  own.add_options()("nprocs", boost::program_options::value<int>()->default_value(1), "ranks to start");
  CaptureStdout out;
  const auto cl = trainer::app::parse_command_line("train", {"--help"}, own);
  CHECK(cl.help);
  CHECK_FALSE(cl.print_config);
  const std::string text = out.text();
  CHECK(text.find("usage: trainer train") != std::string::npos);
  CHECK(text.find("--nprocs") != std::string::npos);
  CHECK(text.find("--config") != std::string::npos);
  CHECK(text.find("--print-config") != std::string::npos);
  CHECK(text.find("--training.train_batch_size") != std::string::npos);
  CHECK(text.find("(default: 16)") != std::string::npos);
  CHECK(text.find("--distributed.collective_timeout") != std::string::npos);
  CHECK(text.find("--backend") != std::string::npos);
}

TEST_CASE("--print-config prints the effective INI after the command line", "[app][config]") {
  CaptureStdout out;
  const auto cl = parse({"--print-config", "--training.train_batch_size", "64"});
  CHECK(cl.help);
  CHECK(cl.print_config);
  CHECK(out.text().find("[training]\n") != std::string::npos);
  CHECK(out.text().find("train_batch_size = 64\n") != std::string::npos);
}

TEST_CASE("the subcommand's own options are parsed into `own`", "[app][config]") {
  namespace po = boost::program_options;
  po::options_description own("predict options");
  own.add_options()("checkpoint", po::value<std::string>()->required(), "checkpoint file")(
      "output", po::value<std::string>()->default_value("predictions.csv"), "CSV to write")("verbose", "chatty");
  const auto cl = trainer::app::parse_command_line("predict", {"--checkpoint", "c.h5", "--verbose", "--devices", "1"},
                                                   own);
  CHECK(cl.own["checkpoint"].as<std::string>() == "c.h5");
  CHECK(cl.own["output"].as<std::string>() == "predictions.csv");
  CHECK(cl.own.count("verbose") == 1);
  CHECK(cl.config.distributed.devices == "1");
  config_test::expect_user_error([&] { trainer::app::parse_command_line("predict", {}, own); },
                                 {"predict:", "checkpoint"}, "--help");
}

TEST_CASE("every key has a meaning and reads back its own default", "[app][config]") {
  // Guards the key table: a new field must come with a description and a
  // get/set pair that agree, or help and --print-config would lie.
  const auto cl = parse({});
  const std::string ini = trainer::app::config_to_ini(cl.config);
  for (const char* key : {"data_files", "image_resize_height", "keypoint_names", "downsample_factor", "imgaug",
                          "context_batch_size", "rng_seed_model_pt", "lr_scheduler_gamma", "early_stop_patience",
                          "model_type", "heatmap_loss_type", "precision", "float32_matmul_precision", "conv_algorithms", "cuda_graphs", "backend", "accelerator", "devices",
                          "num_nodes", "manual_gradient_reduction", "nccl_debug", "nccl_socket_nthreads",
                          "collective_timeout", "bucket_cap_mb"}) {
    INFO(key);
    CHECK(ini.find("\n" + std::string(key) + " =") != std::string::npos);
  }
}

TEST_CASE("under a launcher only the first rank prints help and --print-config", "[app][config]") {
  struct RankEnv {  // sets OMPI_COMM_WORLD_RANK for the test's duration
    explicit RankEnv(const char* rank) { setenv("OMPI_COMM_WORLD_RANK", rank, 1); }
    ~RankEnv() { unsetenv("OMPI_COMM_WORLD_RANK"); }
  };
  {
    RankEnv rank("1");
    CaptureStdout out;
    CHECK(parse({"--print-config"}).help);
    CHECK(parse({"--help"}).help);
    CHECK(out.text().empty());
  }
  {
    RankEnv rank("0");
    CaptureStdout out;
    CHECK(parse({"--print-config"}).print_config);
    CHECK(out.text().find("[training]") != std::string::npos);
  }
}
