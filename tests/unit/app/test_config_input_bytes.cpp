// Config files byte by byte: a NUL or other control character is an error naming
// the line (it would cut the value short), a UTF-8 byte order mark is skipped, a
// FIFO is refused instead of blocking, and a fallback configuration text (a
// checkpoint's) stands in for a missing --config.
#include <catch2/catch.hpp>

#include <sys/stat.h>  // mkfifo

#include <string>  // std::string

#include "config_test_util.hpp"  // ScratchDir, parse, expect_user_error

using namespace config_test;

TEST_CASE("config: a NUL byte inside a value is an error naming the line", "[config]") {
  ScratchDir dir;
  const std::string path = dir.write("nul.cfg", std::string("[training]\nlearning_rate = 0.5\0e-3\n", 35));
  expect_user_error([&] { parse({"--config", path}); }, {"nul.cfg:2", "control character \\x00"});
}

TEST_CASE("config: an escape character is an error too; a tab is fine", "[config]") {
  ScratchDir dir;
  const std::string bad = dir.write("esc.cfg", "[training]\nmax_epochs = 3\x1b[0m\n");
  expect_user_error([&] { parse({"--config", bad}); }, {"esc.cfg:2", "\\x1b"});
  const std::string tab = dir.write("tab.cfg", "[training]\nmax_epochs =\t3\n");
  CHECK(parse({"--config", tab}).config.training.max_epochs == 3);
}

TEST_CASE("config: a UTF-8 byte order mark is skipped", "[config]") {
  ScratchDir dir;
  const std::string path = dir.write("bom.cfg", "\xEF\xBB\xBF[training]\nmax_epochs = 4\n");
  CHECK(parse({"--config", path}).config.training.max_epochs == 4);
}

TEST_CASE("config: a FIFO is refused at once", "[config]") {
  ScratchDir dir;
  const std::string path = dir.path() + "/fifo.cfg";
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  expect_user_error([&] { parse({"--config", path}); }, {"fifo.cfg", "not a regular file"}, "check the path");
}

TEST_CASE("config: a fallback text stands in for --config, and --config wins over it", "[config]") {
  ScratchDir dir;
  boost::program_options::options_description none;
  const trainer::app::FallbackConfig stored{"[training]\nmax_epochs = 5\n", "c.h5 (its stored configuration)"};
  const auto from_fallback = trainer::app::parse_command_line("predict", {}, none, &stored);
  CHECK(from_fallback.config.training.max_epochs == 5);
  CHECK(from_fallback.config.source_description.find("c.h5") != std::string::npos);
  const std::string file = dir.write("run.cfg", "[training]\nmax_epochs = 6\n");
  CHECK(trainer::app::parse_command_line("predict", {"--config", file}, none, &stored).config.training.max_epochs == 6);
  const trainer::app::FallbackConfig broken{"[training]\nmax_epochs = x\n", "c.h5 (its stored configuration)"};
  expect_user_error([&] { trainer::app::parse_command_line("predict", {}, none, &broken); },
                    {"c.h5 (its stored configuration):2", "max_epochs"});
}
