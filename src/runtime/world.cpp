#include "runtime/world.hpp"

#include <unistd.h>  // gethostname

#include "runtime/owned_mpi_comm.hpp"  // OwnedMpiComm: the node and leader communicators
#include "util/error.hpp"                // MPI_CHECK

namespace trainer::runtime {
namespace {

std::string this_hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
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
