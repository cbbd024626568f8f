#include "comm/make_communicator.hpp"

#include "comm/gloo_collectives.hpp"   // GlooCollectives
#include "comm/host_communicator.hpp"  // HostCommunicator
#include "comm/mpi_collectives.hpp"    // MpiCollectives
#include "util/error.hpp"              // UserError
// The NCCL communicator lives in comm/cuda/ (the CUDA build only).
#if defined(TRAINER_WITH_CUDA) && __has_include("comm/cuda/nccl_communicator.hpp")
#include "comm/cuda/nccl_communicator.hpp"  // make_nccl_communicator
#define TRAINER_HAVE_NCCL_COMMUNICATOR 1
#endif

namespace trainer::comm {

std::unique_ptr<Communicator> make_communicator(const std::string& backend, MPI_Comm world,
                                                double timeout_s, int device) {
  if (!(timeout_s > 0)) {
    throw UserError("distributed.collective_timeout must be positive (got " + std::to_string(timeout_s) + ")",
                    "it is the number of seconds a collective may wait for the slowest rank; default 600");
  }
  if (backend == "mpi") {
    return std::make_unique<HostCommunicator>(std::make_unique<MpiCollectives>(world), world, timeout_s);
  }
  if (backend == "gloo") {
    return std::make_unique<HostCommunicator>(std::make_unique<GlooCollectives>(world, timeout_s), world,
                                              timeout_s);
  }
  if (backend == "nccl") {
#ifdef TRAINER_HAVE_NCCL_COMMUNICATOR
    return make_nccl_communicator(world, device, timeout_s);
#else
    (void)device;
    throw UserError("the nccl backend needs the CUDA build of trainer",
                    "use --backend mpi or gloo on CPU, or rebuild with -DTRAINER_CUDA=ON");
#endif
  }
  throw UserError("unknown communication backend '" + backend + "'", "one of: nccl, mpi, gloo");
}

}  // namespace trainer::comm
