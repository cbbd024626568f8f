// Single-process parts of the watchdog: the TRAINER_DEBUG_STOP parser, what /proc
// says of a stopped or exited process, naming this host's other ranks before MPI is
// up, and a stage that outlives its deadline ending the process. The multi-rank
// behaviour (every stall named, no hang) is tests/integration/stall_startup.sh.
#include <catch2/catch.hpp>

#include <signal.h>    // kill, SIGSTOP, SIGKILL
#include <sys/wait.h>  // waitpid
#include <unistd.h>    // fork, execle, _exit, pipe

#include <chrono>  // std::chrono::steady_clock
#include <cstdlib>   // setenv
#include <fstream>   // std::ifstream for /proc files
#include <iterator>  // std::istreambuf_iterator
#include <string>  // std::string
#include <thread>  // std::this_thread::sleep_for

#include "runtime/debug_stop.hpp"
#include "runtime/heartbeats.hpp"
#include "runtime/sibling_ranks.hpp"
#include "runtime/watchdog.hpp"
#include "util/error.hpp"

using namespace trainer;
using namespace trainer::runtime;

namespace {

// A child running `sleep 30` with `rank_env` (e.g. "OMPI_COMM_WORLD_RANK=1") as its
// whole environment, so /proc/<pid>/environ shows it.
pid_t start_sleeper(const char* rank_env) {
  const pid_t pid = fork();
  if (pid == 0) {
    char* const envp[] = {const_cast<char*>(rank_env), nullptr};
    execle("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr), envp);
    _exit(127);
  }
  return pid;
}

// Waits until /proc shows `pid` in a state starting with `prefix`.
bool wait_for_state(pid_t pid, const std::string& prefix) {
  for (int i = 0; i < 200; ++i) {
    if (local_process_state(pid).rfind(prefix, 0) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

TEST_CASE("TRAINER_DEBUG_STOP parses rank:place", "[runtime][watchdog]") {
  CHECK(parse_debug_stop("").rank == -1);
  const auto stop = parse_debug_stop("1:collective #5");
  CHECK(stop.rank == 1);
  CHECK(stop.place == "collective #5");
  CHECK(stop.matches(1, "collective #5"));
  CHECK(stop.matches(1, "start-up: collective #5 of 9"));
  CHECK_FALSE(stop.matches(0, "collective #5"));
  CHECK_FALSE(stop.matches(1, "collective #4"));
  for (const char* bad : {"1", ":MPI_Init", "1:", "a:MPI_Init", "-1:MPI_Init", "1234567:x"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_debug_stop(bad), UserError);
  }
}

TEST_CASE("/proc tells a stopped, a running and an exited process apart", "[runtime][watchdog]") {
  const pid_t child = start_sleeper("X=1");
  REQUIRE(child > 0);
  CHECK(wait_for_state(child, "sleeping"));
  kill(child, SIGSTOP);
  CHECK(wait_for_state(child, "stopped (SIGSTOP"));
  kill(child, SIGKILL);
  CHECK(wait_for_state(child, "exited (a zombie"));
  waitpid(child, nullptr, 0);
  CHECK(local_process_state(child).rfind("exited", 0) == 0);
  CHECK(local_process_state(0).empty());
}

TEST_CASE("before MPI is up, this host's other ranks are found through their launcher", "[runtime][watchdog]") {
  // Two children of this process stand in for two ranks started by one launcher:
  // rank 1 is stopped; the checking child is rank 0 of 3; rank 2 is nowhere.
  const pid_t rank1 = start_sleeper("OMPI_COMM_WORLD_RANK=1");
  REQUIRE(rank1 > 0);
  REQUIRE(wait_for_state(rank1, "sleeping"));
  kill(rank1, SIGSTOP);
  REQUIRE(wait_for_state(rank1, "stopped"));
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t checker = fork();
  if (checker == 0) {
    const Env env{{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "3"}};
    std::string all;
    for (const auto& line : describe_sibling_ranks(env)) all += line + "\n";
    (void)!write(fds[1], all.data(), all.size());
    _exit(0);
  }
  close(fds[1]);
  std::string lines;
  char buffer[512];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) lines.append(buffer, static_cast<std::size_t>(n));
  close(fds[0]);
  waitpid(checker, nullptr, 0);
  kill(rank1, SIGKILL);
  waitpid(rank1, nullptr, 0);
  INFO(lines);
  CHECK(lines.find("rank 1 (pid " + std::to_string(rank1) + ", this host): the process is stopped") !=
        std::string::npos);
  CHECK(lines.find("rank(s) 2: not running on this host") != std::string::npos);
  CHECK(describe_sibling_ranks(Env{}).empty());  // no launcher: nothing to name
}

TEST_CASE("a watchdog stage that outlives its deadline ends the process; one that ends in time does not",
          "[runtime][watchdog]") {
  const auto run_child = [](double stage_s) {
    const pid_t child = fork();
    if (child == 0) {
      Watchdog dog(0.3, Env{{"OMPI_COMM_WORLD_RANK", "0"}});
      {
        const auto stage = dog.stage("test: waiting");
        std::this_thread::sleep_for(std::chrono::duration<double>(stage_s));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));  // disarmed: nothing fires
      _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  const auto start = std::chrono::steady_clock::now();
  CHECK(run_child(5.0) == kExitFailure);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
  CHECK(run_child(0.1) == 0);
}

TEST_CASE("a watchdog report before MPI is up says what it can", "[runtime][watchdog]") {
  const Watchdog dog(7, Env{{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
  const std::string report = dog.report("start-up: MPI_Init");
  INFO(report);
  CHECK(report.find("error: [rank 0 of 2] start-up: MPI_Init did not complete within 7 s") == 0);
  CHECK(report.find("rank(s) 1: not running on this host") != std::string::npos);
  CHECK(report.find("hint: ") != std::string::npos);
  CHECK_FALSE(watch(nullptr, "no watchdog").has_value());
}

TEST_CASE("a --nprocs parent's report names its spawned copies, not a false 'every rank runs'", "[runtime][watchdog]") {
  // Issue 26: a parent waiting in MPI_Comm_spawn has no launcher variables; its report
  // said "every rank on this host is running" while the copy was stopped or killed.
  {
    Watchdog dog(7, Env{});
    const std::string report = dog.report("start-up: MPI_Init");
    INFO(report);
    CHECK(report.find("every rank on this host is running") == std::string::npos);
    CHECK(report.find("no launcher variable names the ranks") != std::string::npos);
  }
  // A copy of this test binary, spawned as a child and stopped: found among the
  // descendants, with its rank from its OMPI_COMM_WORLD_RANK (0 of its world: rank 1).
  // Catch2's --wait-for-keypress keeps it waiting on a pipe nobody writes to.
  int input[2];
  REQUIRE(::pipe(input) == 0);
  const pid_t child = fork();
  if (child == 0) {
    ::dup2(input[0], 0);
    ::setenv("OMPI_COMM_WORLD_RANK", "0", 1);
    ::execl("/proc/self/exe", "unit_tests", "--wait-for-keypress", "start", "[no-such-tag]", static_cast<char*>(nullptr));
    _exit(127);
  }
  bool exec_done = false;  // the environment of /proc shows the exec'd process's
  for (int i = 0; i < 500 && !exec_done; ++i) {
    std::ifstream environ("/proc/" + std::to_string(child) + "/environ");
    const std::string all{std::istreambuf_iterator<char>(environ), std::istreambuf_iterator<char>()};
    exec_done = all.find("OMPI_COMM_WORLD_RANK=0") != std::string::npos;
    if (!exec_done) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(child, SIGSTOP);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Watchdog dog(7, Env{});
  dog.spawning_ranks(2);
  const std::string report = dog.report("start-up: starting 2 more rank(s) (MPI_Comm_spawn)");
  ::kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ::close(input[0]);
  ::close(input[1]);
  REQUIRE(exec_done);
  INFO(report);
  CHECK(report.find("rank 1 (pid " + std::to_string(child) + ", spawned by --nprocs): the process is stopped") !=
        std::string::npos);
  CHECK(report.find("rank(s) 2 (spawned by --nprocs): not running") != std::string::npos);
  CHECK(report.find("every rank on this host is running") == std::string::npos);
}
