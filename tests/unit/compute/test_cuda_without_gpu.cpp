// The CUDA build on a machine without a usable GPU: asking for the CUDA backend is
// a user error with a hint, not a crash. (With a GPU, tests/gpu/ covers the backend.)
#ifdef TRAINER_WITH_CUDA
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>  // cudaGetDeviceCount

#include "compute/backend.hpp"  // make_cuda_backend
#include "util/error.hpp"       // UserError

TEST_CASE("cuda backend without a usable GPU is a user error", "[compute][cuda]") {
  int count = 0;
  if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) {
    WARN("a GPU is visible: this case is for machines without one (see tests/gpu)");
    return;
  }
  try {
    trainer::compute::make_cuda_backend(0);
    FAIL("make_cuda_backend succeeded without a GPU");
  } catch (const trainer::UserError& e) {
    CHECK(std::string(e.what()).find("no usable GPU") != std::string::npos);
    CHECK(e.hint().find("accelerator=cpu") != std::string::npos);
  }
}
#endif
