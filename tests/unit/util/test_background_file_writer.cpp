// util/background_file_writer.hpp: the newest content lands, a failed write is thrown
// by the next call and never lost, and the destructor writes what is pending.
#include <catch2/catch.hpp>

#include <filesystem>  // std::filesystem

#include "../data/scratch_dir.hpp"  // ScratchDir
#include "util/background_file_writer.hpp"
#include "util/error.hpp"  // UserError
#include "../text_file.hpp"  // read_text_file

using trainer::testing::read_text_file;
using trainer::BackgroundFileWriter;
using trainer::data::testing::ScratchDir;

TEST_CASE("the background writer leaves the newest content on disk", "[util][background_file]") {
  ScratchDir dir("background_newest");
  const std::string path = dir.file("metrics.csv");
  BackgroundFileWriter file(path);
  for (int i = 0; i < 50; ++i) file.write("version " + std::to_string(i) + "\n");
  file.wait();
  CHECK(read_text_file(path) == "version 49\n");
  file.write("after wait\n");
  file.wait();
  CHECK(read_text_file(path) == "after wait\n");
}

TEST_CASE("the background writer's destructor writes what is pending", "[util][background_file]") {
  ScratchDir dir("background_destructor");
  const std::string path = dir.file("metrics.csv");
  {
    BackgroundFileWriter file(path);
    file.write("first\n");
    file.write("last\n");
  }
  CHECK(read_text_file(path) == "last\n");
}

TEST_CASE("a failed background write is thrown by the next call, once", "[util][background_file]") {
  ScratchDir dir("background_failure");
  BackgroundFileWriter file(dir.file("no/such/folder/metrics.csv"));
  file.write("lost?\n");
  CHECK_THROWS_AS(file.wait(), trainer::UserError);
  CHECK_NOTHROW(file.wait());  // reported once
  file.write("again\n");
  CHECK_THROWS_AS(file.wait(), trainer::UserError);
}

TEST_CASE("a writer that never wrote creates no file", "[util][background_file]") {
  ScratchDir dir("background_unused");
  const std::string path = dir.file("metrics.csv");
  { BackgroundFileWriter file(path); }
  CHECK_FALSE(std::filesystem::exists(path));
}
