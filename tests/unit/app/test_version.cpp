#include <catch2/catch.hpp>

#include "app/commands.hpp"

TEST_CASE("version text names the version and the compiled-in backends", "[app]") {
  const std::string v = trainer::app::version_text();
  CHECK(v.rfind("trainer ", 0) == 0);
  CHECK(v.find("mpi") != std::string::npos);
  CHECK(v.find("gloo") != std::string::npos);
}
