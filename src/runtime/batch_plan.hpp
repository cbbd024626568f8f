#pragma once
// lightning-pose's batch arithmetic, worker threads per rank and learning-rate
// scaling: pure functions, tested against lightning-pose's own test vectors.
#include <string>  // std::string
#include <vector>  // std::vector

#include "util/env.hpp"  // Env

namespace trainer::runtime {

// Per-GPU train/val batch: ceil(global / num_gpus). `num_gpus` < 1 is treated as 1
// and a warning is appended. Throws UserError when `global` < 1 (`key` names it).
int per_gpu_batch(int global, int num_gpus, const std::string& key, std::vector<std::string>* warnings = nullptr);

// heatmap_mhcrnn context frames per GPU: ceil((B - 4) / num_gpus) + 4; below 5 is an
// error whose message shows the value.
int per_gpu_context_batch(int global, int num_gpus);

// Unlabelled video frames per GPU for the unsupervised losses (heatmap model):
// ceil(L / num_gpus) of the global sequence length L (dali.base.train.sequence_length),
// as lightning-pose divides it. L below num_gpus is an error: some GPU would get a
// frame no other rank's sequence continues, and a sequence of 1 has no temporal pair.
int per_gpu_unlabeled_frames(int sequence_length, int num_gpus);

// Loader worker threads per rank: an explicit `num_workers` (>= 0) wins; under SLURM
// SLURM_CPUS_PER_TASK - 1; otherwise cores_per_node / ranks_per_node - 1; both at
// least 0 and at most 8. Appends a warning when workers of all ranks on the node
// exceed its cores (SLURM_CPUS_ON_NODE when set, else `cores_per_node`).
int workers_per_rank(int num_workers, const Env& env, int cores_per_node, int ranks_per_node,
                     std::vector<std::string>* warnings);
inline constexpr int kMaxWorkersPerRank = 8;

// Compute threads (OpenMP, oneDNN) of one rank on the CPU path, and the rule that
// chose them: OMP_NUM_THREADS when set (its first level); else SLURM_CPUS_PER_TASK, no
// more than the rank's usable CPUs; else those CPUs (`usable_cpus`: its affinity
// mask, or the node's cores when unknown) divided evenly among the `sharers` ranks of
// the node that may run on them. At least 1.
struct ComputeThreads {
  int threads = 1;
  std::string source;
};
ComputeThreads compute_threads_per_rank(const Env& env, int usable_cpus, int sharers);

// How the learning rate follows the global batch (training.lr_scaling).
enum class LrScaling { none, linear, sqrt };
// The names of training.lr_scaling: "none", "linear", "sqrt".
const std::vector<std::string>& lr_scaling_names();
// One of lr_scaling_names(); throws UserError listing them for anything else.
LrScaling parse_lr_scaling(const std::string& mode);

// `base_lr`, tuned for `reference_batch`, scaled to `effective_batch` by `mode` (one of
// lr_scaling_names()). Throws UserError on an unknown mode or reference_batch < 1.
double scaled_learning_rate(double base_lr, const std::string& mode, int effective_batch, int reference_batch);

}  // namespace trainer::runtime
