// GPU compute over the MPI communicator (host staging), one rank: device buffers
// round-trip through pinned memory, host pointers pass straight through.
#include <catch2/catch.hpp>

#include <mpi.h>  // MPI_COMM_WORLD

#include "comm/cuda/host_staged_communicator.hpp"  // make_host_staged_communicator
#include "comm/host_stream.hpp"                    // HostStream
#include "comm/make_communicator.hpp"              // make_communicator
#include "gpu_test_util.hpp"

using namespace trainer;
using namespace trainer::compute;
using namespace trainer::compute::gpu_test;

TEST_CASE("host-staged mpi communicator with device buffers", "[gpu][comm]") {
  Twins t;
  auto comm = comm::make_host_staged_communicator(comm::make_communicator("mpi", MPI_COMM_WORLD, 60.0), *t.gpu);
  CHECK(comm->name() == "mpi");
  CHECK(comm->uses_device_buffers());
  const std::size_t n = 300007;
  auto v = random_vector(n, 3);
  auto buf = t.device(v);
  comm->all_reduce(buf.data(), n, comm::ReduceOp::avg, t.gs(), "staged avg");
  t.gpu->scale(buf.data(), 2.f, n, t.gs());
  auto r = t.host(buf);
  for (std::size_t i = 0; i < n; i += 1009) CHECK(r[i] == 2.f * v[i]);
  auto work = comm->all_reduce_async(buf.data(), n, comm::ReduceOp::sum, t.gs(), "staged bucket");
  work->wait(t.gs());
  CHECK(t.host(buf) == r);
  comm->broadcast(buf.data(), n, 0, t.gs(), "staged broadcast");
  auto gathered = t.zeros(n);
  comm->all_gather(buf.data(), gathered.data(), n, t.gs(), "staged gather");
  CHECK(t.host(gathered) == r);
  // Host values (metric sums) pass through with a host stream.
  double sums[2] = {1.5, 2.5};
  comm::HostStream host;
  comm->all_reduce(sums, 2, comm::ReduceOp::sum, host, "metrics");
  CHECK(sums[0] == 1.5);
  comm->barrier("end");
}
