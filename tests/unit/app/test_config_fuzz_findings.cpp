// Inputs found by the fuzz_config_ini harness (tests/fuzz, docs/BUILD.md "Fuzzing"),
// kept as the bytes that made it fail.
#include <catch2/catch.hpp>  // TEST_CASE, REQUIRE, CHECK

#include <string>  // std::string

#include "app/config_parse.hpp"  // config_to_ini
#include "config_test_util.hpp"  // ScratchDir, parse, expect_user_error

using config_test::expect_user_error;
using config_test::parse;
using config_test::ScratchDir;

TEST_CASE("fuzz finding: a list element holding both quote characters", "[app][config][fuzz]") {
  // The element `"ta'l, base". 'paw#1'` was accepted as it stands (its two ends are
  // different quotes), but --print-config can quote an element with only one of
  // ' and ", so the printed configuration split it at the comma and was rejected
  // ("expected a list with balanced quotes"): a run's saved config.ini that cannot
  // be read back. Such an element is now rejected where it is first read.
  ScratchDir dir;
  const std::string path = dir.write("finding.cfg",
                                     "[data]\n"
                                     "num_keypoints = 2\n"
                                     "keypoint_names = [nose, \"ta'l, base\". 'paw#1']\n"
                                     "data_files = shards/p]rt-*.h~_prob = 0.1\n");
  expect_user_error([&] { parse({"--config", path}); },
                    {path + ":3:", "bad value for data.keypoint_names", "' or \" but not both"});
}

TEST_CASE("list elements with one kind of quote inside survive --print-config", "[app][config][fuzz]") {
  ScratchDir dir;
  const std::string path = dir.write("quotes.cfg", "[data]\nkeypoint_names = [\"ta'l, base\", 'say \"hi\"', plain]\n");
  const trainer::Config config = parse({"--config", path}).config;
  REQUIRE(config.data.keypoint_names == std::vector<std::string>{"ta'l, base", "say \"hi\"", "plain"});
  const std::string printed = dir.write("printed.cfg", trainer::app::config_to_ini(config));
  CHECK(parse({"--config", printed}).config.data.keypoint_names == config.data.keypoint_names);
}

TEST_CASE("fuzz finding: a list element YAML cannot read survives the lightning-pose config.yaml", "[app][config][fuzz]") {
  // fuzz_config_yaml (2026-11-26): `keypoint_names: n}ll` is a one-element list
  // here, but config_to_yaml handed "[n}ll]" to yaml-cpp to type its items, which
  // threw "illegal flow end": --print-config, and the config.yaml of every run
  // folder, failed with a raw yaml-cpp error. Such a list is now written as itself.
  ScratchDir dir;
  const std::string path = dir.write("finding.yaml", "data:\n  keypoint_names: n}ll\n");
  const trainer::Config config = parse({"--config", path}).config;
  REQUIRE(config.data.keypoint_names == std::vector<std::string>{"n}ll"});
  const std::string printed = dir.write("printed.yaml", trainer::app::config_to_yaml(config));
  CHECK(parse({"--config", printed}).config.data.keypoint_names == config.data.keypoint_names);
}
