// Entry point of the GPU test binary. Without a visible GPU it prints
// "SKIPPED: no GPU visible" and exits 77, which ctest reports as skipped. With one,
// MPI is initialized (the NCCL tests bootstrap over it; a plain run is an MPI
// singleton) and Catch2 runs the tests.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>   // Catch::Session
#include <cuda_runtime_api.h>  // cudaGetDeviceCount
#include <mpi.h>               // MPI_Init, MPI_Finalize

#include <iostream>  // std::cout

int main(int argc, char** argv) {
  int devices = 0;
  const cudaError_t rc = cudaGetDeviceCount(&devices);
  if (rc != cudaSuccess || devices == 0) {
    std::cout << "SKIPPED: no GPU visible (cudaGetDeviceCount: "
              << (rc == cudaSuccess ? "0 devices" : cudaGetErrorString(rc)) << ")" << std::endl;
    return 77;
  }
  MPI_Init(&argc, &argv);
  const int result = Catch::Session().run(argc, argv);
  MPI_Finalize();
  return result;
}
