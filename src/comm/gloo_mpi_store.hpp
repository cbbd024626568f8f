#pragma once
// A gloo::rendezvous::Store carried by MPI, so Gloo needs no MASTER_ADDR/PORT, no
// Redis and no shared file system: the job's MPI launch is the rendezvous.
//
// Gloo's full-mesh rendezvous has every rank set the same keys in the same order
// (its hostname, then its pair addresses) and then read everybody's. So set() is
// a collective here: all ranks call it together, and one MPI_Allgatherv hands
// every rank every rank's key and value; get() and wait() read what arrived.
// A key that a set() round did not deliver is an internal error, never a hang.
#include <mpi.h>  // MPI_Comm

#include <map>     // std::map
#include <string>  // std::string
#include <vector>  // std::vector

#include <gloo/rendezvous/store.h>  // gloo::rendezvous::Store

namespace trainer::comm {

class GlooMpiStore final : public gloo::rendezvous::Store {
 public:
  explicit GlooMpiStore(MPI_Comm comm) : comm_(comm) {}
  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  MPI_Comm comm_;
  std::map<std::string, std::vector<char>> values_;
};

}  // namespace trainer::comm
