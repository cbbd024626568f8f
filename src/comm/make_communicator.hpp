#pragma once
// Builds the Communicator a run asked for. Every rank of `world` must call it
// together (the backends duplicate `world` and connect their ranks).
#include <mpi.h>  // MPI_Comm

#include <memory>  // std::unique_ptr
#include <string>  // std::string

#include "comm/communicator.hpp"  // Communicator

namespace trainer::comm {

// backend: "mpi", "gloo" or "nccl" (the CUDA build only; `device` is the local GPU).
// timeout_s: the deadline of every collective (distributed.collective_timeout).
std::unique_ptr<Communicator> make_communicator(const std::string& backend, MPI_Comm world,
                                                double timeout_s, int device = -1);

}  // namespace trainer::comm
