#pragma once
// The NCCL communicator: device buffers, bootstrapped over MPI (rank 0 creates the
// ncclUniqueId and broadcasts it as MPI_BYTE), collectives on a dedicated
// high-priority stream joined to the caller's streams by events, and a watchdog
// thread that aborts the communicator (ncclCommAbort) when a collective outlives
// the timeout or NCCL reports an asynchronous error.
#include <mpi.h>   // MPI_Comm
#include <memory>  // std::unique_ptr
#include <string>  // std::string

#include "comm/communicator.hpp"  // comm::Communicator

namespace trainer::comm {

struct NcclOptions {
  // Exported as NCCL_DEBUG / NCCL_SOCKET_NTHREADS before the communicator is
  // created (as VISSL does); empty / 0 leaves the environment as it is.
  std::string debug;
  int socket_nthreads = 0;
};

// Collective, on every rank of `world`: selects `device_ordinal` with cudaSetDevice
// and joins the NCCL communicator. timeout_s <= 0 disables the watchdog timeout
// (asynchronous NCCL errors are still reported).
std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm world, int device_ordinal,
                                                     double timeout_s);
std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm world, int device_ordinal,
                                                     double timeout_s, const NcclOptions& options);

}  // namespace trainer::comm
