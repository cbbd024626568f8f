#include "comm/make_communicator.hpp"

#include "comm/gloo_collectives.hpp"   // GlooCollectives
#include "comm/host_communicator.hpp"  // HostCommunicator
#include "comm/mpi_collectives.hpp"    // MpiCollectives
#include "comm/nccl_debug.hpp"         // parse_nccl_debug
#include "util/env.hpp"              // capture_environment, env_get
#include "util/error.hpp"              // UserError
// The NCCL communicator lives in comm/cuda/ (the CUDA build only).
#if defined(TRAINER_WITH_CUDA) && __has_include("comm/cuda/nccl_communicator.hpp")
#include "comm/cuda/host_staged_communicator.hpp"  // make_host_staged_communicator
#include "comm/cuda/nccl_communicator.hpp"        // make_nccl_communicator
#define TRAINER_HAVE_NCCL_COMMUNICATOR 1
#endif

namespace trainer::comm {

namespace {

// GPU compute with a host backend: collectives see device pointers, so they go
// through pinned host staging. CPU compute uses the host communicator as it is.
std::unique_ptr<Communicator> for_device(std::unique_ptr<Communicator> host, int device,
                                         compute::Backend* device_memory) {
#ifdef TRAINER_HAVE_NCCL_COMMUNICATOR
  if (device >= 0) {
    TRAINER_ASSERT(device_memory, "a host communicator for GPU buffers needs the CUDA backend to stage them");
    return make_host_staged_communicator(std::move(host), *device_memory);
  }
#else
  (void)device;
  (void)device_memory;
#endif
  return host;
}

}  // namespace

void require_nccl_build() {
#ifndef TRAINER_HAVE_NCCL_COMMUNICATOR
  throw UserError("the nccl backend needs the CUDA build of trainer",
                  "use --backend mpi or gloo on CPU, or rebuild with -DTRAINER_CUDA=ON");
#endif
}

std::unique_ptr<Communicator> make_communicator(const std::string& backend, MPI_Comm world,
                                                double timeout_s, int device, const NcclSettings& nccl,
                                                const runtime::Watchdog* watchdog,
                                                compute::Backend* device_memory) {
  if (!(timeout_s > 0)) {
    throw UserError("distributed.collective_timeout must be positive (got " + std::to_string(timeout_s) + ")",
                    "it is the number of seconds a collective may wait for the slowest rank; default 600");
  }
  // The debugging and network variables, read once for this communicator.
  const Env env = capture_environment();
  if (backend == "mpi") {
    return for_device(std::make_unique<HostCommunicator>(std::make_unique<MpiCollectives>(world), world, timeout_s,
                                                         watchdog, skip_collective_from_env(env)),
                      device, device_memory);
  }
  if (backend == "gloo") {
    const std::string ifname = env_get(env, "GLOO_SOCKET_IFNAME").value_or("");
    return for_device(std::make_unique<HostCommunicator>(std::make_unique<GlooCollectives>(world, timeout_s, ifname),
                                                         world, timeout_s, watchdog, skip_collective_from_env(env)),
                      device, device_memory);
  }
  if (backend == "nccl") {
    require_nccl_build();
#ifdef TRAINER_HAVE_NCCL_COMMUNICATOR
    return make_nccl_communicator(world, device, timeout_s,
                                  NcclOptions{parse_nccl_debug(nccl.debug), nccl.socket_nthreads});
#else
    (void)nccl;
#endif
  }
  throw UserError("unknown communication backend '" + backend + "'", "one of: nccl, mpi, gloo");
}

}  // namespace trainer::comm
