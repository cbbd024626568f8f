// The configuration a checkpoint is continued with when none is given
// (app/checkpoint_config.hpp): what counts as a given configuration, and the run's
// config.ini put first.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "app/checkpoint_config.hpp"
#include "app/config_parse.hpp"

using namespace trainer::app;

TEST_CASE("a configuration is given by --config or by a YAML file first (either case)", "[app][config]") {
  CHECK(names_configuration({"conf.YAML", "--resume", "x.h5"}));
  CHECK(names_configuration({"conf.yml"}));
  CHECK(names_configuration({"--resume", "x.h5", "--config", "a.ini"}));
  CHECK(names_configuration({"--config=a.ini"}));
  CHECK_FALSE(names_configuration({"--resume", "x.h5"}));
  CHECK_FALSE(names_configuration({"run.ini", "--resume", "x.h5"}));  // the parser takes only YAML first
  CHECK_FALSE(names_configuration({}));
  CHECK(is_positional_config("a.Yaml") == false);  // the parser's four spellings, no more
  CHECK(is_positional_config("a.YML"));
  CHECK_FALSE(is_positional_config("--x.yaml"));
}

TEST_CASE("a checkpoint's run config.ini goes first on the command line", "[app][config]") {
  namespace fs = std::filesystem;
  const fs::path run = fs::temp_directory_path() / "trainer-checkpoint-config-test";
  fs::remove_all(run);
  fs::create_directories(run / "checkpoints");
  std::ofstream(run / "checkpoints" / "last.h5") << "not read when config.ini is there";
  std::ofstream(run / "config.ini") << "[training]\nmax_epochs = 7\n";
  Args args{"--resume", (run / "checkpoints" / "last.h5").string(), "--training.max_epochs", "9"};
  FallbackConfig stored;
  const std::string note = use_checkpoint_configuration(args, (run / "checkpoints" / "last.h5").string(), stored);
  CHECK(note == "configuration: " + (run / "config.ini").string());
  REQUIRE(args.size() == 6);
  CHECK(args[0] == "--config");
  CHECK(args[1] == (run / "config.ini").string());
  CHECK(stored.text.empty());
  fs::remove_all(run);
}
