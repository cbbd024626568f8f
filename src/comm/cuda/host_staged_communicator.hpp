#pragma once
// GPU compute over a host communicator (--backend mpi or gloo where NCCL cannot
// run): device buffers are copied to pinned host memory, reduced by the wrapped
// host communicator, and copied back, all ordered on the caller's CUDA stream.
// Host pointers (metric sums, counters) pass straight through, so the wrapper can
// serve every caller. A fallback: each collective blocks the host while it runs.
#include <memory>  // std::unique_ptr

#include "comm/communicator.hpp"  // comm::Communicator
#include "compute/backend.hpp"     // compute::Backend: its pinned host memory stages the buffers

namespace trainer::comm {

// `host` must keep its buffers on the host (uses_device_buffers() == false). The
// result reports uses_device_buffers() == true and the host backend's name; its
// staging memory comes from `memory` (the CUDA backend, whose host memory is pinned),
// which must outlive it.
std::unique_ptr<Communicator> make_host_staged_communicator(std::unique_ptr<Communicator> host,
                                                            compute::Backend& memory);

}  // namespace trainer::comm
