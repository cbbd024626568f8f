#pragma once
// Where this process sits among all ranks of the run: global rank, rank among the
// processes on the same node, and which node. Built from a communicator with
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), which works under every launcher
// (mpirun, srun, self-spawn), or made up for a hypothetical cluster (`trainer plan
// --nodes 2 --gpus-per-node 4`).
#include <string>  // std::string

#include <mpi.h>  // MPI_Comm

namespace trainer::runtime {

class Watchdog;

struct World {
  int rank = 0;          // global rank in `comm`
  int size = 1;          // number of ranks
  int local_rank = 0;    // rank among the ranks on this node
  int local_size = 1;    // ranks on this node
  int node_rank = 0;     // index of this node, 0..num_nodes-1 (ordered by the nodes' lowest rank)
  int num_nodes = 1;
  // The CPUs of this node, from the ranks' affinity masks (0: unknown, e.g. hypothetical
  // worlds): this rank's, how many ranks of the node (this one included) may run on
  // some of the same CPUs, and how many CPUs the node's ranks may run on together.
  int usable_cpus = 0;
  int cpu_sharers = 1;
  int node_cpus = 0;
  std::string hostname;
  // "singleton", "mpirun", "srun", "self-spawn" (set by MpiSession), "hypothetical",
  // or empty when unknown (then the launcher environment is taken at its word).
  std::string launched_by;
  MPI_Comm comm = MPI_COMM_NULL;  // the run's communicator (not owned); null for hypothetical worlds
  // The session's watchdog (not owned; null for hypothetical worlds): collectives on
  // `comm` outside a Communicator run inside one of its stages (watchdog.hpp).
  Watchdog* watchdog = nullptr;
};

// The world of `comm` (collective over `comm`). Does not take ownership.
World describe_world(MPI_Comm comm);

// Rank `rank` of a made-up cluster with `nodes` nodes of `ranks_per_node` ranks each,
// ranks numbered node by node as srun and mpirun --map-by node:PE do by default.
World hypothetical_world(int rank, int nodes, int ranks_per_node);

}  // namespace trainer::runtime
