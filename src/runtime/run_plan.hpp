#pragma once
// The batch plan: everything a run decides before touching data or a GPU, for one
// rank of a launched world (plan_run) or every rank of a made-up cluster
// (plan_hypothetical). `trainer plan` prints it; `trainer train` follows it.
#include <string>  // std::string
#include <vector>  // std::vector

#include "config/config.hpp"     // trainer::Config
#include "util/env.hpp"    // Env
#include "runtime/world.hpp"  // World

namespace trainer::runtime {

// What this rank does.
struct RankPlan {
  int rank = 0;
  int local_rank = 0;
  int local_size = 1;
  int node_rank = 0;
  std::string hostname;
  int device = -1;            // GPU ordinal relative to CUDA_VISIBLE_DEVICES; -1 on CPU
  int train_batch_size = 0;   // per rank: ceil(B / G)
  int val_batch_size = 0;     // per rank: ceil(B / G)
  int test_batch_size = 0;    // not divided
  int context_batch_size = -1;  // heatmap_mhcrnn: ceil((B - 4) / G) + 4; -1 for other models
  int unlabeled_frames = -1;  // unsupervised losses: ceil(L / G) video frames per step (heatmap_mhcrnn:
                              // the context batch, ceil((B - 4) / G) + 4); -1 without
  int compute_threads = 0;    // CPU path: OpenMP/oneDNN threads of this rank (0 on GPUs)
  std::string compute_threads_source;  // the rule that chose them (batch_plan.hpp)
  int num_workers = 0;        // loader threads of this rank
  int unlabeled_workers = 0;  // unsupervised losses: video decoding threads (see plan_run); 0 without
  std::vector<std::string> warnings;  // about this rank only
};

// The whole run as seen from one rank: the shared decisions plus this rank's part.
struct RunPlan {
  std::string accelerator;       // "cpu" or "gpu"
  std::string accelerator_note;  // why (e.g. "auto: no GPU visible, chose cpu")
  std::string backend;           // "nccl", "mpi" or "gloo"
  std::string launched_by;       // World::launched_by
  int world_size = 1;
  int num_nodes = 1;
  int data_parallel_ranks = 1;   // G: GPUs, or CPU ranks on the CPU path
  int train_batch_size = 0;      // global, as configured
  int val_batch_size = 0;        // global, as configured
  int context_batch_size = 0;    // global, as configured
  int unlabeled_sequence_length = 0;  // global unlabelled frames per step; 0 without unsupervised losses
  bool unlabeled_context = false;  // heatmap_mhcrnn: the unlabelled frames are a context batch
  int effective_train_batch = 0; // per-rank x G
  int effective_val_batch = 0;
  std::string lr_scaling;        // one of lr_scaling_names() (batch_plan.hpp)
  int reference_batch_size = 0;
  double base_learning_rate = 0;
  double learning_rate = 0;      // after lr_scaling
  std::vector<std::string> warnings;  // about the whole run; printed once, by rank 0
  RankPlan rank;
};

// This rank's plan. `visible_gpus` from visible_gpu_count(); `cores_per_node` 0
// means this machine's hardware threads. Throws UserError for anything the user
// must fix (accelerator gpu without GPU, nccl on CPU, bad devices, too many ranks
// for the GPUs, a context batch below 5, launcher mismatches).
RunPlan plan_run(const Config& config, const World& world, int visible_gpus, const Env& env,
                 int cores_per_node = 0);

// A cluster that is not launched: `nodes` x `ranks_per_node` ranks, each node with
// `gpus_per_node` GPUs and `cores_per_node` cores; `cpus_per_task` > 0 plans as
// under `#SBATCH --cpus-per-task`.
struct ClusterShape {
  int nodes = 1;
  int gpus_per_node = 0;
  int ranks_per_node = 0;   // 0: one per GPU (or 1 without GPUs)
  int cores_per_node = 0;   // 0: this machine's
  int cpus_per_task = 0;
};
// Every rank of the cluster, at most kMaxPlannedRanks of them; negative sizes, or a
// world larger than that, are UserErrors.
inline constexpr int kMaxPlannedRanks = 65536;
std::vector<RunPlan> plan_hypothetical(const Config& config, const ClusterShape& shape);

// The names of distributed.accelerator: "auto", "cpu", "gpu".
const std::vector<std::string>& accelerator_names();
// The names of distributed.backend: "auto", "nccl", "mpi", "gloo" (auto is resolved here;
// the others are comm::make_communicator's backends).
const std::vector<std::string>& backend_names();

// Resolution steps (the parse functions of the two choices above), exposed for tests.
// accelerator_names() -> "cpu"/"gpu"; `note` explains an auto choice; anything else
// is a UserError listing the names.
std::string resolve_accelerator(const std::string& requested, int visible_gpus, bool devices_ask_for_none,
                                std::string* note);
// backend_names() -> "nccl", "mpi" or "gloo" for the resolved accelerator.
std::string resolve_backend(const std::string& requested, const std::string& accelerator);

}  // namespace trainer::runtime
