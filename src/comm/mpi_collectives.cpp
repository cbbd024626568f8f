#include "comm/mpi_collectives.hpp"

#include <algorithm>  // std::min
#include <chrono>     // std::chrono::microseconds
#include <climits>    // INT_MAX
#include <cstring>    // std::memcpy
#include <thread>     // std::this_thread::sleep_for, yield

#include "util/error.hpp"  // MPI_CHECK

namespace trainer::comm {

namespace {
// MPI counts are int: larger buffers go in chunks of at most this many elements.
constexpr std::size_t kMaxChunk = static_cast<std::size_t>(INT_MAX) / 2;
// Polling: yield between tests for this long, then nap up to kMaxNap between them.
constexpr auto kSpin = std::chrono::milliseconds(2);
constexpr auto kMaxNap = std::chrono::microseconds(200);
// How often a waiting collective asks whether a member's process has exited, and how
// long it keeps testing after one has: the member's last messages may still be on
// their way (it exits only after its collectives are done on its side).
constexpr auto kPeerCheck = std::chrono::milliseconds(200);
constexpr auto kExitGrace = std::chrono::seconds(1);
}  // namespace

bool wait_until(MPI_Request& request, const Deadline& deadline) {
  // Open MPI's non-blocking collectives progress only inside MPI calls, so the
  // waiting thread keeps testing: yielding between tests for the first
  // milliseconds (a large all-reduce needs many rounds, each one test away), then
  // napping at most 200 us so a long wait for a late rank leaves the CPU to the
  // threads still computing.
  const auto spin_until = std::chrono::steady_clock::now() + kSpin;
  auto next_peer_check = spin_until;
  auto give_up = deadline.at;
  auto nap = std::chrono::microseconds(5);
  for (;;) {
    int done = 0;
    MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now >= give_up) return false;
    // A killed member leaves the request pending for good (under --nprocs no launcher
    // ends the job): stop soon after instead of at the deadline.
    if (deadline.peer_exited && now >= next_peer_check) {
      next_peer_check = now + kPeerCheck;
      if (deadline.peer_exited()) give_up = std::min(give_up, now + kExitGrace), next_peer_check = give_up;
    }
    if (now < spin_until) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, kMaxNap);
    }
  }
}

MpiCollectives::MpiCollectives(MPI_Comm world) : comm_(runtime::OwnedMpiComm::duplicate(world)) {
  rank_ = comm_.rank();
  size_ = comm_.size();
}

bool MpiCollectives::sum_chunks(void* data, std::size_t count, std::size_t elem_size,
                                MPI_Datatype type, const Deadline& deadline) {
  auto* bytes = static_cast<char*>(data);
  for (std::size_t done = 0; done < count;) {
    const std::size_t n = std::min(kMaxChunk, count - done);
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, bytes + done * elem_size, static_cast<int>(n), type,
                             MPI_SUM, comm_.get(), &request));
    if (!wait_until(request, deadline)) return false;
    done += n;
  }
  return true;
}

bool MpiCollectives::sum(float* data, std::size_t count, const Deadline& deadline) {
  return sum_chunks(data, count, sizeof(float), MPI_FLOAT, deadline);
}

bool MpiCollectives::sum(double* data, std::size_t count, const Deadline& deadline) {
  return sum_chunks(data, count, sizeof(double), MPI_DOUBLE, deadline);
}

bool MpiCollectives::broadcast(float* data, std::size_t count, int root, const Deadline& deadline) {
  for (std::size_t done = 0; done < count;) {
    const std::size_t n = std::min(kMaxChunk, count - done);
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_CHECK(MPI_Ibcast(data + done, static_cast<int>(n), MPI_FLOAT, root, comm_.get(), &request));
    if (!wait_until(request, deadline)) return false;
    done += n;
  }
  return true;
}

bool MpiCollectives::all_gather(const float* send, float* recv, std::size_t count, const Deadline& deadline) {
  if (count * static_cast<std::size_t>(size_) > kMaxChunk) {
    // Rare (metrics and BN statistics are small): gather rank by rank.
    for (int root = 0; root < size_; ++root) {
      float* block = recv + static_cast<std::size_t>(root) * count;
      if (root == rank_) std::memcpy(block, send, count * sizeof(float));
      if (!broadcast(block, count, root, deadline)) return false;
    }
    return true;
  }
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_CHECK(MPI_Iallgather(send, static_cast<int>(count), MPI_FLOAT, recv, static_cast<int>(count),
                           MPI_FLOAT, comm_.get(), &request));
  return wait_until(request, deadline);
}

bool MpiCollectives::barrier(const Deadline& deadline) {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_CHECK(MPI_Ibarrier(comm_.get(), &request));
  return wait_until(request, deadline);
}

}  // namespace trainer::comm
