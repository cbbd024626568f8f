#pragma once
// RAII owner of a private duplicate of an MPI communicator. Each Communicator
// duplicates the world so its messages can never match anyone else's.
#include <mpi.h>  // MPI_Comm, MPI_Comm_dup, MPI_Comm_free

#include "util/error.hpp"  // MPI_CHECK

namespace trainer::comm {

class OwnedMpiComm {
 public:
  OwnedMpiComm() = default;
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

 private:
  void reset() noexcept {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
    comm_ = MPI_COMM_NULL;
  }
  MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace trainer::comm
