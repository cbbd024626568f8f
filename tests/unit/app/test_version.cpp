#include <catch2/catch.hpp>

#include "app/commands.hpp"

TEST_CASE("version text names the version, revision and the compiled-in backends", "[app]") {
  const std::string v = trainer::app::version_text();
  CHECK(v.rfind("trainer ", 0) == 0);
  CHECK(v.find("(git ") != std::string::npos);
  CHECK(v.find("mpi (") != std::string::npos);
  CHECK(v.find("gloo (") != std::string::npos);
  CHECK(v.find("oneDNN ") != std::string::npos);
#ifdef TRAINER_WITH_CUDA
  CHECK(v.find("nccl (") != std::string::npos);
  CHECK(v.find("architectures " TRAINER_CUDA_ARCHS) != std::string::npos);
#else
  CHECK(v.find("nccl") == std::string::npos);
#endif
}
