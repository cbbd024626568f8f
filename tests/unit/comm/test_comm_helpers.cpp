// Single-process parts of the comm layer: the debug skip parser, the bandwidth
// formulas (nccl-tests' definitions) and the communication thread's FIFO order.
// Multi-rank behaviour is tested by tests/integration/allreduce_*.sh and comm_*.sh.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "comm/bandwidth.hpp"
#include "comm/comm_thread.hpp"
#include "comm/debug_skip.hpp"
#include "util/error.hpp"

using namespace trainer;
using namespace trainer::comm;

TEST_CASE("TRAINER_DEBUG_SKIP_COLLECTIVE parses rank:index", "[comm]") {
  const auto none = parse_skip_collective("");
  CHECK_FALSE(none.matches(0, 1));
  const auto skip = parse_skip_collective("1:3");
  CHECK(skip.rank == 1);
  CHECK(skip.index == 3);
  CHECK(skip.matches(1, 3));
  CHECK_FALSE(skip.matches(0, 3));
  CHECK_FALSE(skip.matches(1, 4));
  for (const char* bad : {"1", ":3", "1:", "a:3", "1:b", "1:0", "-1:2", "1:3x"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_skip_collective(bad), UserError);
  }
}

TEST_CASE("TRAINER_DEBUG_SKIP_COLLECTIVE is read from the Env it is given", "[comm]") {
  CHECK(skip_collective_from_env({}).rank == -1);
  const auto skip = skip_collective_from_env({{"TRAINER_DEBUG_SKIP_COLLECTIVE", "2:5"}});
  CHECK(skip.matches(2, 5));
  CHECK_THROWS_AS(skip_collective_from_env({{"TRAINER_DEBUG_SKIP_COLLECTIVE", "x"}}), UserError);
}

TEST_CASE("busbw follows nccl-tests: algbw * 2(n-1)/n", "[comm]") {
  CHECK(algbw_gbps(1000000000, 1.0) == Approx(1.0));
  CHECK(busbw_gbps(1000000000, 1.0, 1) == Approx(0.0));
  CHECK(busbw_gbps(1000000000, 1.0, 2) == Approx(1.0));
  CHECK(busbw_gbps(1000000000, 0.5, 4) == Approx(3.0));
  CHECK(algbw_gbps(100, 0.0) == 0.0);
}

TEST_CASE("the communication thread runs tasks in submission order", "[comm]") {
  for (bool threaded : {true, false}) {
    CommThread thread(threaded);
    std::vector<int> order;
    std::vector<std::shared_ptr<Completion>> done;
    for (int i = 0; i < 50; ++i) {
      done.push_back(thread.submit([&order, i] {
        if (i % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
        order.push_back(i);
      }));
    }
    for (auto& d : done) d->wait();
    REQUIRE(order.size() == 50);
    for (int i = 0; i < 50; ++i) CHECK(order[i] == i);
  }
}

TEST_CASE("a task's exception reaches the waiter", "[comm]") {
  CommThread thread(true);
  auto failing = thread.submit([] { throw SystemError("boom"); });
  auto next = thread.submit([] {});
  CHECK_THROWS_WITH(failing->wait(), "boom");
  CHECK_NOTHROW(next->wait());
}

TEST_CASE("the communication thread overlaps with the caller", "[comm]") {
  CommThread thread(true);
  std::atomic<bool> release{false};
  auto work = thread.submit([&] {
    while (!release.load()) std::this_thread::yield();
  });
  // The caller keeps going while the task runs: that is the overlap buckets rely on.
  CHECK_FALSE(work->done());
  release = true;
  work->wait();
  CHECK(work->done());
}
