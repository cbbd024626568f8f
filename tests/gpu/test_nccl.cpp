// The NCCL communicator on one rank (the test binary is an MPI singleton):
// bootstrap, all-reduce (sum, avg, float, double, async), broadcast, all-gather,
// barrier.
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>  // cudaMemcpy for the double buffer
#include <mpi.h>               // MPI_COMM_WORLD

#include "comm/cuda/device_allreduce_bench.hpp"  // time_device_all_reduce
#include "comm/cuda/nccl_communicator.hpp"       // make_nccl_communicator
#include "gpu_test_util.hpp"

using namespace trainer;
using namespace trainer::compute;
using namespace trainer::compute::gpu_test;

TEST_CASE("nccl communicator with one rank", "[gpu][nccl]") {
  Twins t;
  auto comm = comm::make_nccl_communicator(MPI_COMM_WORLD, 0, 60.0);
  REQUIRE(comm->name() == "nccl");
  REQUIRE(comm->size() == 1);
  CHECK(comm->rank() == 0);
  CHECK(comm->uses_device_buffers());
  comm->set_step(3);

  const std::size_t n = 1000003;
  auto v = random_vector(n, 9);
  auto buf = t.device(v);
  comm->all_reduce(buf.data(), n, comm::ReduceOp::sum, t.gs(), "test sum");
  CHECK(t.host(buf) == v);
  comm->all_reduce(buf.data(), n, comm::ReduceOp::avg, t.gs(), "test avg");
  CHECK(t.host(buf) == v);

  // Async: the compute stream waits on the work's event, then scales the result.
  auto work = comm->all_reduce_async(buf.data(), n, comm::ReduceOp::avg, t.gs(), "bucket 0");
  work->wait(t.gs());
  t.gpu->scale(buf.data(), 2.f, n, t.gs());
  auto r = t.host(buf);
  for (std::size_t i = 0; i < n; i += 4999) CHECK(r[i] == 2.f * v[i]);

  // double all-reduce on device memory (two floats' worth of storage per double)
  DeviceBuffer dbuf(*t.gpu, 8);
  std::vector<double> d{1.5, -2.25, 3.0, 4.0};
  CHECK(cudaMemcpy(dbuf.data(), d.data(), sizeof(double) * 4, cudaMemcpyHostToDevice) == cudaSuccess);
  comm->all_reduce(reinterpret_cast<double*>(dbuf.data()), 4, comm::ReduceOp::sum, t.gs());
  t.gs().synchronize();
  std::vector<double> back(4);
  CHECK(cudaMemcpy(back.data(), dbuf.data(), sizeof(double) * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(back == d);

  comm->broadcast(buf.data(), n, 0, t.gs(), "params");
  auto gathered = t.zeros(n);
  comm->all_gather(buf.data(), gathered.data(), n, t.gs(), "gather");
  CHECK(t.host(gathered) == t.host(buf));
  comm->barrier("end of test");
}


TEST_CASE("device all-reduce timing for bench allreduce --backend nccl", "[gpu][nccl]") {
  auto comm = comm::make_nccl_communicator(MPI_COMM_WORLD, 0, 60.0);
  for (std::size_t count : {std::size_t(1), std::size_t(1) << 20}) {
    const double s = comm::time_device_all_reduce(*comm, count, 2, 5);
    INFO("count " << count << ": " << s * 1e6 << " us");
    CHECK(s > 0.0);
    CHECK(s < 1.0);
  }
}
