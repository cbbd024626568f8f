#pragma once
// HostCollectives on MPI: non-blocking collectives (MPI_Iallreduce, MPI_Ibcast,
// MPI_Iallgather, MPI_Ibarrier) on a private duplicate of the world, polled with
// MPI_Test until done or until the deadline. Polling, rather than a blocking
// call, is what lets a stuck collective be noticed at all.
#include <mpi.h>  // MPI_Comm, MPI_Datatype

#include "comm/host_collectives.hpp"  // HostCollectives
#include "runtime/owned_mpi_comm.hpp"  // runtime::OwnedMpiComm

namespace trainer::comm {

class MpiCollectives final : public HostCollectives {
 public:
  explicit MpiCollectives(MPI_Comm world);
  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  bool sum(float* data, std::size_t count, const Deadline& deadline) override;
  bool sum(double* data, std::size_t count, const Deadline& deadline) override;
  bool broadcast(float* data, std::size_t count, int root, const Deadline& deadline) override;
  bool all_gather(const float* send, float* recv, std::size_t count, const Deadline& deadline) override;
  bool barrier(const Deadline& deadline) override;

 private:
  bool sum_chunks(void* data, std::size_t count, std::size_t elem_size, MPI_Datatype type,
                  const Deadline& deadline);

  runtime::OwnedMpiComm comm_;
  int rank_ = 0;
  int size_ = 1;
};

// Waits for `request` with MPI_Test (spinning briefly, then sleeping a little
// longer each time) until it completes, `deadline.at` passes or a member's process
// exits. Returns completion.
bool wait_until(MPI_Request& request, const Deadline& deadline);

}  // namespace trainer::comm
