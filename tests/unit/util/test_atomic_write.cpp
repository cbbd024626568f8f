// util/atomic_write.hpp: whole files or none, no temporary file left by an error,
// and the start-up removal of temporary files whose writer is gone.
#include <catch2/catch.hpp>

#include <sys/wait.h>  // waitpid
#include <unistd.h>    // fork, _exit, getpid, getppid

#include <algorithm>   // std::sort
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ifstream, std::ofstream
#include <sstream>     // std::ostringstream
#include <stdexcept>   // std::runtime_error

#include "../data/scratch_dir.hpp"  // ScratchDir
#include "util/atomic_write.hpp"
#include "util/error.hpp"  // UserError
#include "../text_file.hpp"  // read_text_file

using trainer::testing::read_text_file;
using trainer::data::testing::ScratchDir;
namespace fs = std::filesystem;

namespace {


void touch(const std::string& path) { std::ofstream(path) << "partial"; }

// A pid that no process has: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  REQUIRE(child > 0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

}  // namespace

TEST_CASE("write_file_atomically writes the whole text and leaves no temporary file", "[util]") {
  ScratchDir dir("atomic");
  const std::string path = dir.file("config.ini");
  trainer::write_file_atomically(path, "a = 1\n");
  trainer::write_file_atomically(path, "a = 2\n");  // replaces
  CHECK(read_text_file(path) == "a = 2\n");
  CHECK_FALSE(fs::exists(trainer::temp_path_for(path)));
  CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()) == 1);
}

TEST_CASE("write_file_atomically into a missing folder is a UserError", "[util]") {
  ScratchDir dir("atomic");
  CHECK_THROWS_AS(trainer::write_file_atomically(dir.file("no/such/x.csv"), "x"), trainer::UserError);
}

TEST_CASE("a PendingFile that is not committed removes its temporary file", "[util]") {
  ScratchDir dir("atomic");
  const std::string path = dir.file("last.h5");
  std::string temp;
  try {
    trainer::PendingFile pending(path);
    temp = pending.temp_path();
    touch(temp);
    throw std::runtime_error("the write failed");
  } catch (const std::runtime_error&) {
  }
  CHECK(temp == path + ".tmp-" + std::to_string(::getpid()));
  CHECK_FALSE(fs::exists(temp));
  CHECK_FALSE(fs::exists(path));
}

TEST_CASE("a commit that cannot rename reports it and removes the temporary file", "[util]") {
  ScratchDir dir("atomic");
  const std::string path = dir.file("out");
  fs::create_directories(path + "/inside");  // a non-empty folder cannot be replaced by a file
  trainer::PendingFile pending(path);
  touch(pending.temp_path());
  CHECK_THROWS_AS(pending.commit(), trainer::SystemError);
  CHECK_FALSE(fs::exists(pending.temp_path()));
}

TEST_CASE("temp_file_pid reads only our temporary names", "[util]") {
  CHECK(trainer::temp_file_pid("last.h5.tmp-1234") == 1234);
  CHECK(trainer::temp_file_pid("config.ini.tmp-7") == 7);
  CHECK(trainer::temp_file_pid("last.h5") == 0);
  CHECK(trainer::temp_file_pid(".tmp-12") == 0);          // no file name before it
  CHECK(trainer::temp_file_pid("last.h5.tmp-") == 0);
  CHECK(trainer::temp_file_pid("last.h5.tmp-12a") == 0);
  CHECK(trainer::temp_file_pid("last.h5.tmp-012") == 0);
  CHECK(trainer::temp_file_pid("last.h5.tmp-99999999999") == 0);
  CHECK(trainer::temp_file_pid("notes.tmp-12.txt") == 0);
  // TempName::keep_extension (video writers pick the container by the extension).
  CHECK(trainer::temp_file_pid("v_labeled.mp4.tmp-1234.mp4") == 1234);
  CHECK(trainer::temp_file_pid(".clip_labeled.tmp-1234.mp4") == 1234);  // the labeled-video writer's old name
  CHECK(trainer::temp_file_pid("clip_labeled.tmp-1234.mp4") == 0);       // not hidden: not a name it made
  CHECK(trainer::temp_file_pid("v_labeled.mp4.tmp-1234.avi") == 0);
  CHECK(trainer::temp_file_pid("v_labeled.mp4.tmp-.mp4") == 0);
}

TEST_CASE("every temporary name temp_path_for makes is one the cleanup knows", "[util]") {
  // Issue 26: the labeled video was written to `.v_labeled.tmp-<pid>.mp4`, a name of its
  // own that the start-up cleanup did not know, so a kill left it there for good.
  for (const auto name : {trainer::TempName::plain, trainer::TempName::keep_extension}) {
    for (const std::string path : {"run/checkpoints/last.h5", "video_preds/labeled_videos/v_labeled.mp4", "config.ini",
                                   "a/b/no_extension", ".hidden"}) {
      const std::string temp = trainer::temp_path_for(path, name);
      INFO(temp);
      CHECK(trainer::temp_file_pid(temp.substr(temp.rfind('/') + 1)) == ::getpid());
      CHECK(temp.rfind(path, 0) == 0);  // beside the file, in its folder
    }
  }
  CHECK(trainer::temp_path_for("v.mp4", trainer::TempName::keep_extension) ==
        "v.mp4.tmp-" + std::to_string(::getpid()) + ".mp4");
}

TEST_CASE("remove_stale_temp_files removes only temporary files of dead processes", "[util]") {
  ScratchDir dir("stale");
  const std::string dead = dir.file("last.h5.tmp-" + std::to_string(dead_pid()));
  const std::string live = dir.file("best.h5.tmp-" + std::to_string(::getppid()));
  const std::string mine = dir.file("metrics.csv.tmp-" + std::to_string(::getpid()));
  const std::string other = dir.file("notes.tmp-1x");
  const std::string data = dir.file("last.h5");
  for (const auto& p : {dead, live, mine, other, data}) touch(p);
  fs::create_directories(dir.file("folder.tmp-" + std::to_string(dead_pid())));  // not a file: kept

  const std::string dead_video = dir.file("v_labeled.mp4.tmp-" + std::to_string(dead_pid()) + ".mp4");
  const std::string live_video = dir.file("w_labeled.mp4.tmp-" + std::to_string(::getppid()) + ".mp4");
  for (const auto& p : {dead_video, live_video}) touch(p);

  auto removed = trainer::remove_stale_temp_files(dir.path().string());
  std::sort(removed.begin(), removed.end());
  REQUIRE(removed.size() == 2);
  CHECK(removed[0] == dead);
  CHECK(removed[1] == dead_video);
  for (const auto& p : {dead, dead_video}) CHECK_FALSE(fs::exists(p));
  for (const auto& p : {live, mine, other, data, live_video}) CHECK(fs::exists(p));
  CHECK(trainer::remove_stale_temp_files(dir.file("missing")).empty());
}
