// HostBuffer: the one owner of a backend's (pinned) host memory.
#include <catch2/catch.hpp>  // TEST_CASE, CHECK

#include <utility>  // std::move

#include "compute/backend.hpp"      // make_cpu_backend
#include "compute/host_buffer.hpp"  // HostBuffer, ensure_capacity

using namespace trainer::compute;

TEST_CASE("HostBuffer owns, moves and grows backend host memory", "[compute][host_buffer]") {
  auto be = make_cpu_backend(1);
  HostBuffer<float> empty;
  CHECK(empty.data() == nullptr);
  CHECK(empty.size() == 0);

  HostBuffer<float> a(*be, 4);
  REQUIRE(a.data() != nullptr);
  CHECK(a.size() == 4);
  for (int i = 0; i < 4; ++i) a[std::size_t(i)] = float(i);
  float* const memory = a.data();

  // A move hands the memory over; the source owns nothing afterwards.
  HostBuffer<float> b(std::move(a));
  CHECK(b.data() == memory);
  CHECK(b.size() == 4);
  CHECK(a.data() == nullptr);  // NOLINT(bugprone-use-after-move): checking the moved-from state
  CHECK(a.size() == 0);
  CHECK(b[3] == 3.f);

  HostBuffer<float> c;
  c = std::move(b);
  CHECK(c.data() == memory);
  CHECK(b.data() == nullptr);  // NOLINT(bugprone-use-after-move)

  // ensure_capacity keeps a large enough buffer and regrows a small one.
  ensure_capacity(*be, c, 3);
  CHECK(c.data() == memory);
  CHECK(c.size() == 4);
  ensure_capacity(*be, c, 1000);
  CHECK(c.size() == 1000);
  REQUIRE(c.data() != nullptr);
  c[999] = 1.f;

  c.reset();
  CHECK(c.data() == nullptr);
  CHECK(c.size() == 0);
  HostBuffer<double> zero(*be, 0);  // nothing asked, nothing allocated
  CHECK(zero.data() == nullptr);
}
