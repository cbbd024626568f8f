#pragma once
// Builds the Communicator a run asked for. Every rank of `world` must call it
// together (the backends duplicate `world` and connect their ranks).
#include <mpi.h>  // MPI_Comm

#include <memory>  // std::unique_ptr
#include <string>  // std::string

#include "comm/communicator.hpp"  // Communicator
#include "compute/backend.hpp"    // compute::Backend: pinned staging memory
#include "runtime/watchdog.hpp"   // runtime::Watchdog: heartbeats name silent ranks

namespace trainer::comm {

// Settings that only the NCCL backend reads; exported to NCCL's environment
// before its communicator is created (distributed.nccl_debug, nccl_socket_nthreads).
struct NcclSettings {
  std::string debug;        // NCCL_DEBUG, one of nccl_debug_names(); empty leaves the environment alone
  int socket_nthreads = 0;  // NCCL_SOCKET_NTHREADS; 0 leaves the environment alone
};

// backend: "mpi", "gloo" or "nccl" (the CUDA build only; `device` is the local GPU).
// timeout_s: the deadline of every collective (distributed.collective_timeout).
// With a GPU (`device` >= 0) and a host backend (mpi, gloo), buffers are device
// memory: the host communicator is wrapped to stage them through pinned memory.
// watchdog: the session's (may be null); its heartbeats let a stall or failure
// report name the rank that stopped or died.
// device_memory: with a GPU and a host backend, the CUDA backend whose pinned host
// memory stages the buffers (required then; it must outlive the communicator).
// Throws the UserError of a build without NCCL (CPU-only) for the nccl backend;
// nothing in the CUDA build. Callers that check anything else about "nccl" first
// (its GPUs) call it before, so a CPU-only build names the real obstacle.
void require_nccl_build();

std::unique_ptr<Communicator> make_communicator(const std::string& backend, MPI_Comm world,
                                                double timeout_s, int device = -1,
                                                const NcclSettings& nccl = {},
                                                const runtime::Watchdog* watchdog = nullptr,
                                                compute::Backend* device_memory = nullptr);

}  // namespace trainer::comm
