// The CPU backend reads its environment variables from the Env it is given.
#include <catch2/catch.hpp>  // TEST_CASE, CHECK

#include "compute/cpu/cpu_backend.hpp"  // cpu::CpuBackend
#include "util/error.hpp"               // UserError

using namespace trainer;

TEST_CASE("CpuBackend takes OMP_NUM_THREADS and TRAINER_CPU_CONV_LAYOUT from its Env", "[compute][env]") {
  const compute::cpu::CpuBackend three(0, compute::Precision::fp32, {{"OMP_NUM_THREADS", "3,1"}});
  CHECK(three.threads() == 3);  // the first level counts
  const compute::cpu::CpuBackend asked(2, compute::Precision::fp32, {{"OMP_NUM_THREADS", "3"}});
  CHECK(asked.threads() == 2);  // an explicit count wins
  const compute::cpu::CpuBackend plain(1, compute::Precision::fp32, {{"TRAINER_CPU_CONV_LAYOUT", "plain"}});
  CHECK(plain.threads() == 1);
  CHECK_THROWS_AS(compute::cpu::CpuBackend(1, compute::Precision::fp32, {{"TRAINER_CPU_CONV_LAYOUT", "nchw"}}),
                  UserError);
}
