// The foreign-file screen (util/h5_screen.hpp) and its walk (util/h5_walk.hpp): the
// walk of an h5py-written data set passes and a cut one fails; the screen's verdicts
// on a child that crashes, hangs, fails or passes, with stand-in programs (shell
// scripts) for the trainer's `__screen-hdf5`; the child killed on a time-out; the
// screen off (as in these tests and the fuzzers) leaves foreign files alone.
// The damaged files that crash HDF5 are run through the trainer itself in
// tests/integration/h5_foreign_damaged.sh: here they would crash this process.
#include <catch2/catch.hpp>

#include <signal.h>    // kill
#include <sys/stat.h>  // chmod

#include <chrono>      // std::chrono::steady_clock
#include <filesystem>  // std::filesystem::copy_file
#include <fstream>     // std::ofstream
#include <string>      // std::string
#include <thread>      // std::this_thread::sleep_for

#include "../data/scratch_dir.hpp"  // ScratchDir
#include "util/error.hpp"           // UserError, SystemError
#include "util/h5_screen.hpp"
#include "util/h5_walk.hpp"

namespace h5 = trainer::h5;
using trainer::data::testing::ScratchDir;

namespace {

const std::string kForeign = std::string(TRAINER_SOURCE_DIR) + "/tests/data/hdf5-foreign/undamaged.h5";

// A stand-in for the trainer's `__screen-hdf5`: a shell script with `body`.
std::string script(const ScratchDir& dir, const std::string& name, const std::string& body) {
  const std::string path = dir.file(name);
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

// The screen on with `program` for the test's duration, off again after.
struct ScreenWith {
  explicit ScreenWith(const std::string& program, double seconds = 10) {
    h5::ScreenSettings settings;
    settings.program = program;
    settings.seconds = seconds;
    h5::enable_screen(settings);
  }
  ~ScreenWith() { h5::disable_screen(); }
};

// Whether `pid` runs (a zombie, killed and not yet reaped by init, does not).
bool running(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return false;
  const std::size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

std::string refusal(const std::string& path) {
  try {
    h5::check_before_parsing(path, "data file " + path, "the hint");
  } catch (const trainer::UserError& e) {
    CHECK(e.hint() == "the hint");
    CHECK(e.exit_code() == 2);
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("walk_file: an h5py-written data set passes, a cut copy fails", "[h5_screen]") {
  ScratchDir dir("h5_walk");
  REQUIRE_NOTHROW(h5::walk_file(kForeign));
  const std::string cut = dir.file("cut.h5");
  {
    std::ifstream in(kForeign, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  CHECK_THROWS_AS(h5::walk_file(cut), trainer::SystemError);
}

TEST_CASE("check_before_parsing: the child's verdicts", "[h5_screen]") {
  ScratchDir dir("h5_screen");
  const std::string file = dir.file("f.h5");
  std::filesystem::copy_file(kForeign, file);

  SECTION("off: a foreign file is left to the reader") { CHECK(refusal(file).empty()); }
  SECTION("a clean walk") {
    ScreenWith on(script(dir, "ok.sh", "exit 0"));
    CHECK(refusal(file).empty());
  }
  SECTION("a crash") {
    ScreenWith on(script(dir, "crash.sh", "kill -SEGV $$"));
    CHECK_THAT(refusal(file), Catch::Contains("is truncated or damaged: HDF5 crashed reading it (Segmentation fault"));
  }
  SECTION("an HDF5 error, with the walk's report") {
    ScreenWith on(script(dir, "damaged.sh", "echo 'dataset /images: bad chunk'; exit 3"));
    CHECK_THAT(refusal(file), Catch::Contains("HDF5 cannot read it: dataset /images: bad chunk"));
  }
  SECTION("another exit status") {
    ScreenWith on(script(dir, "fails.sh", "exit 7"));
    CHECK_THAT(refusal(file), Catch::Contains("ended with exit status 7"));
  }
  SECTION("a hang: refused at the limit, the child and what it started killed") {
    const std::string pid_file = dir.file("pid");
    ScreenWith on(script(dir, "hang.sh", "sleep 30 & echo $! > " + pid_file + "; wait"), 0.5);
    const auto start = std::chrono::steady_clock::now();
    CHECK_THAT(refusal(file), Catch::Contains("did not finish reading its structure within 0.5 s"));
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
    std::ifstream in(pid_file);
    long pid = 0;
    REQUIRE(in >> pid);
    for (int i = 0; i < 100 && running(pid); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK_FALSE(running(pid));  // the script's sleep is gone too
  }
  SECTION("a file that passed is not checked again until it changes") {
    const std::string count = dir.file("count");
    ScreenWith on(script(dir, "count.sh", "echo x >> " + count + "; exit 0"));
    CHECK(refusal(file).empty());
    CHECK(refusal(file).empty());
    std::ifstream in(count);
    std::string lines((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(lines == "x\n");
  }
}
