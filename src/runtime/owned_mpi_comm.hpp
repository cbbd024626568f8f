#pragma once
// RAII owner of an MPI communicator: the one way this code holds a communicator
// it must free (the session's world and spawn intercommunicator, the node and
// leader communicators of node discovery, each Communicator's private duplicate,
// which keeps its messages from ever matching anyone else's).
// Freeing after MPI_Finalize is skipped (MPI forbids it).
#include <mpi.h>  // MPI_Comm, MPI_Comm_dup, MPI_Comm_free

#include "util/error.hpp"  // MPI_CHECK

namespace trainer::runtime {

class OwnedMpiComm {
 public:
  OwnedMpiComm() = default;
  // Takes ownership of `comm` (MPI_COMM_NULL: owns nothing).
  static OwnedMpiComm adopt(MPI_Comm comm) {
    OwnedMpiComm owned;
    owned.comm_ = comm;
    return owned;
  }
  static OwnedMpiComm duplicate(MPI_Comm parent) {
    OwnedMpiComm owned;
    MPI_CHECK(MPI_Comm_dup(parent, &owned.comm_));
    return owned;
  }
  OwnedMpiComm(OwnedMpiComm&& other) noexcept : comm_(other.comm_) { other.comm_ = MPI_COMM_NULL; }
  OwnedMpiComm& operator=(OwnedMpiComm&& other) noexcept {
    if (this != &other) {
      reset();
      comm_ = other.comm_;
      other.comm_ = MPI_COMM_NULL;
    }
    return *this;
  }
  OwnedMpiComm(const OwnedMpiComm&) = delete;
  OwnedMpiComm& operator=(const OwnedMpiComm&) = delete;
  ~OwnedMpiComm() { reset(); }

  MPI_Comm get() const { return comm_; }
  bool empty() const { return comm_ == MPI_COMM_NULL; }
  int rank() const {
    int r = 0;
    MPI_CHECK(MPI_Comm_rank(comm_, &r));
    return r;
  }
  int size() const {
    int s = 0;
    MPI_CHECK(MPI_Comm_size(comm_, &s));
    return s;
  }

  // Frees the communicator now (before MPI_Finalize, where the order matters).
  void reset() noexcept {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
    comm_ = MPI_COMM_NULL;
  }
  // Forgets the communicator without freeing it: for a process leaving while other
  // ranks may still use it (freeing could wait for them, and a watchdog thread may
  // still hold it for an abort).
  void abandon() noexcept { comm_ = MPI_COMM_NULL; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace trainer::runtime
