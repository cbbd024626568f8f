#include "runtime/world.hpp"

#include <unistd.h>  // gethostname

#include <vector>  // std::vector

#include "runtime/owned_mpi_comm.hpp"  // OwnedMpiComm: the node and leader communicators
#include "util/cpu_affinity.hpp"         // usable_cpu_ids
#include "util/error.hpp"                // MPI_CHECK

namespace trainer::runtime {
namespace {

std::string this_hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

// The node's ranks exchange their affinity masks (collective over `node`): a rank's
// compute threads share its CPUs with every rank whose mask overlaps it (all of the
// node's ranks when the launcher bound none; none with one core each).
void describe_node_cpus(MPI_Comm node, int local_rank, int local_size, World& world) {
  constexpr int kBits = 1024;  // CPU_SETSIZE; an unreadable mask is sent empty
  std::vector<unsigned char> mine(kBits / 8, 0);
  const std::vector<int> ids = usable_cpu_ids();
  for (int cpu : ids)
    if (cpu < kBits) mine[static_cast<std::size_t>(cpu / 8)] |= static_cast<unsigned char>(1u << (cpu % 8));
  std::vector<unsigned char> all(mine.size() * static_cast<std::size_t>(local_size));
  MPI_CHECK(MPI_Allgather(mine.data(), kBits / 8, MPI_UNSIGNED_CHAR, all.data(), kBits / 8, MPI_UNSIGNED_CHAR, node));
  std::vector<unsigned char> node_mask(mine.size(), 0);
  bool every_mask_known = true;
  int sharers = 0;
  for (int r = 0; r < local_size; ++r) {
    const unsigned char* theirs = &all[mine.size() * static_cast<std::size_t>(r)];
    bool overlaps = false, known = false;
    for (std::size_t b = 0; b < mine.size(); ++b) {
      overlaps = overlaps || (theirs[b] & mine[b]) != 0;
      known = known || theirs[b] != 0;
      node_mask[b] |= theirs[b];
    }
    every_mask_known = every_mask_known && known;
    sharers += overlaps || r == local_rank;
  }
  if (ids.empty() || !every_mask_known) return;  // unknown: the plan falls back to the hardware's count
  world.usable_cpus = static_cast<int>(ids.size());
  world.cpu_sharers = sharers;
  for (unsigned char byte : node_mask) world.node_cpus += __builtin_popcount(byte);
}

}  // namespace

World describe_world(MPI_Comm comm) {
  World world;
  world.comm = comm;
  world.hostname = this_hostname();
  MPI_CHECK(MPI_Comm_rank(comm, &world.rank));
  MPI_CHECK(MPI_Comm_size(comm, &world.size));

  // Ranks sharing memory are on one node; key=rank keeps the global order.
  MPI_Comm made = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, world.rank, MPI_INFO_NULL, &made));
  const OwnedMpiComm node = OwnedMpiComm::adopt(made);
  MPI_CHECK(MPI_Comm_rank(node.get(), &world.local_rank));
  MPI_CHECK(MPI_Comm_size(node.get(), &world.local_size));
  describe_node_cpus(node.get(), world.local_rank, world.local_size, world);

  // The first rank of each node joins the "leaders" communicator; its rank there is
  // the node's index, which it then broadcasts to the other ranks of its node.
  const int color = world.local_rank == 0 ? 0 : MPI_UNDEFINED;
  made = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split(comm, color, world.rank, &made));
  const OwnedMpiComm leaders = OwnedMpiComm::adopt(made);  // MPI_COMM_NULL off the leaders
  int node_info[2] = {0, 0};
  if (!leaders.empty()) {
    MPI_CHECK(MPI_Comm_rank(leaders.get(), &node_info[0]));
    MPI_CHECK(MPI_Comm_size(leaders.get(), &node_info[1]));
  }
  MPI_CHECK(MPI_Bcast(node_info, 2, MPI_INT, 0, node.get()));
  world.node_rank = node_info[0];
  world.num_nodes = node_info[1];
  return world;
}

World hypothetical_world(int rank, int nodes, int ranks_per_node) {
  World world;
  world.size = nodes * ranks_per_node;
  world.rank = rank;
  world.local_size = ranks_per_node;
  world.local_rank = rank % ranks_per_node;
  world.node_rank = rank / ranks_per_node;
  world.num_nodes = nodes;
  world.hostname = "node" + std::to_string(world.node_rank);
  world.launched_by = "hypothetical";
  return world;
}

}  // namespace trainer::runtime
