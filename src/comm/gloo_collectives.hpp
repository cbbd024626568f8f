#pragma once
// HostCollectives on Gloo's TCP transport. The full mesh is connected through
// GlooMpiStore (MPI carries the addresses). The TCP device binds to the address
// of this host's name, or to the interface named by GLOO_SOCKET_IFNAME (as in
// PyTorch) when the hostname resolves to an address other nodes cannot reach.
#include <mpi.h>  // MPI_Comm

#include <cstdint>  // std::uint32_t
#include <memory>   // std::shared_ptr
#include <string>   // std::string

#include "comm/host_collectives.hpp"  // HostCollectives

namespace gloo {
class Context;  // gloo/context.h, kept out of this header
}

namespace trainer::comm {

class GlooCollectives final : public HostCollectives {
 public:
  // `socket_ifname`: GLOO_SOCKET_IFNAME, the interface to listen on (empty: the
  // address of this host's name).
  GlooCollectives(MPI_Comm world, double timeout_s, const std::string& socket_ifname);
  ~GlooCollectives() override;
  std::string name() const override { return "gloo"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // Where the TCP device listens, e.g. "hostname vm" or "interface eth0".
  const std::string& endpoint() const { return endpoint_; }

  bool sum(float* data, std::size_t count, const Deadline& deadline) override;
  bool sum(double* data, std::size_t count, const Deadline& deadline) override;
  bool broadcast(float* data, std::size_t count, int root, const Deadline& deadline) override;
  bool all_gather(const float* send, float* recv, std::size_t count, const Deadline& deadline) override;
  bool barrier(const Deadline& deadline) override;

 private:
  template <typename T>
  bool sum_impl(T* data, std::size_t count, const Deadline& deadline);

  int rank_ = 0;
  int size_ = 1;
  std::string endpoint_;
  std::uint32_t tag_ = 0;
  std::shared_ptr<gloo::Context> context_;  // null for a single rank
};

}  // namespace trainer::comm
