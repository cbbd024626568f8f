#include <catch2/catch.hpp>

#include <cstdlib>
#include <vector>

#include "compute/backend.hpp"

using namespace trainer::compute;

TEST_CASE("cpu backend: description, memory, copies and streams", "[compute]") {
  auto be = make_cpu_backend(2);
  CHECK(be->kind() == DeviceKind::cpu);
  CHECK(be->description().find("2 threads") != std::string::npos);
  CHECK(be->description().find("oneDNN") != std::string::npos);
  Stream& s = be->default_stream();
  CHECK(s.native() == nullptr);

  DeviceBuffer buf(*be, 1000);
  REQUIRE(buf.data() != nullptr);
  CHECK(reinterpret_cast<std::uintptr_t>(buf.data()) % 64 == 0);
  for (std::size_t i = 0; i < buf.size(); ++i) REQUIRE(buf.data()[i] == 0.f);  // zeroed

  std::vector<float> host(1000);
  for (int i = 0; i < 1000; ++i) host[i] = float(i);
  be->upload(buf.data(), host.data(), 1000, s);
  be->scale(buf.data(), 2.f, 1000, s);
  std::vector<float> back(1000);
  be->download(back.data(), buf.data(), 1000, s);
  CHECK(back[999] == 1998.f);
  be->fill(buf.data(), 3.f, 500, s);
  be->copy(back.data(), buf.data(), 1000, s);
  CHECK(back[0] == 3.f);
  CHECK(back[499] == 3.f);
  CHECK(back[500] == 1000.f);

  auto s2 = be->create_stream();
  auto ev = s.record();
  s2->wait(*ev);
  s2->synchronize();

  void* h = be->allocate_host(17);
  CHECK(h != nullptr);
  be->release_host(h);

  DeviceBuffer moved = std::move(buf);
  CHECK(buf.data() == nullptr);
  CHECK(moved.size() == 1000);
}

TEST_CASE("cpu backend: thread count from OMP_NUM_THREADS when not given", "[compute]") {
  const char* old = std::getenv("OMP_NUM_THREADS");
  std::string saved = old ? old : "";
  setenv("OMP_NUM_THREADS", "3", 1);
  CHECK(make_cpu_backend(0)->description().find("3 threads") != std::string::npos);
  CHECK(make_cpu_backend(1)->description().find("1 thread)") != std::string::npos);
  if (old) setenv("OMP_NUM_THREADS", saved.c_str(), 1); else unsetenv("OMP_NUM_THREADS");
}
