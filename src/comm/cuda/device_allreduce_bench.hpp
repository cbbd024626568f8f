#pragma once
// Timing of in-place all-reduces on device buffers, for `trainer bench allreduce`
// with a communicator that uses device buffers (nccl, or a host-staged one). The
// host-buffer loop in src/app/bench_allreduce.cpp cannot feed NCCL; it calls this
// instead when comm.uses_device_buffers().
#include <cstddef>  // std::size_t

#include "comm/communicator.hpp"  // comm::Communicator

namespace trainer::comm {

// Collective (every rank, same arguments). Runs `warmup` untimed and `iters` timed
// float32 sum all-reduces of `count` elements in device memory of the current CUDA
// device on one stream, and returns this rank's mean seconds per all-reduce
// (from a barrier to the stream's completion).
double time_device_all_reduce(Communicator& comm, std::size_t count, int warmup, int iters);

}  // namespace trainer::comm
