#include "runtime/batch_plan.hpp"

#include <algorithm>  // std::clamp
#include <cmath>      // std::ceil, std::sqrt
#include <cstdlib>    // std::atoi

#include "util/error.hpp"      // UserError
#include "util/name_list.hpp"  // join_names

namespace trainer::runtime {
namespace {

// ceil(a / b) for b > 0 and any sign of a, as Python's math.ceil(a / b).
int ceil_div(int a, int b) {
  const int q = a / b;
  return (a % b != 0 && a > 0) ? q + 1 : q;
}

}  // namespace

int per_gpu_batch(int global, int num_gpus, const std::string& key, std::vector<std::string>* warnings) {
  if (global < 1) {
    throw UserError("training." + key + "=" + std::to_string(global) + " must be at least 1",
                    "it is the global batch across all GPUs, as in lightning-pose");
  }
  if (num_gpus < 1) {
    if (warnings) warnings->push_back("num_gpus=" + std::to_string(num_gpus) + " treated as 1 for the batch sizes");
    num_gpus = 1;
  }
  return ceil_div(global, num_gpus);
}

int per_gpu_context_batch(int global, int num_gpus) {
  if (num_gpus < 1) num_gpus = 1;
  const int per_gpu = ceil_div(global - 4, num_gpus) + 4;
  if (per_gpu < 5) {
    throw UserError("training.context_batch_size (lightning-pose: dali.context.train.batch_size) = " +
                        std::to_string(global) + " over " + std::to_string(num_gpus) +
                        " GPU(s) gives " + std::to_string(per_gpu) +
                        " context frames per GPU; heatmap_mhcrnn needs at least 5 (2 frames either side of each "
                        "labeled one)",
                    "per-GPU context batch = ceil((B - 4) / GPUs) + 4; set training.context_batch_size to 5 "
                    "or more");
  }
  return per_gpu;
}

int per_gpu_unlabeled_frames(int sequence_length, int num_gpus) {
  if (num_gpus < 1) num_gpus = 1;
  if (sequence_length < num_gpus) {
    throw UserError("dali.base.train.sequence_length=" + std::to_string(sequence_length) + " is smaller than the " +
                        std::to_string(num_gpus) + " GPUs (ranks) it is divided over",
                    "each rank takes ceil(sequence_length / GPUs) consecutive unlabelled frames; set "
                    "sequence_length to at least the number of ranks (lightning-pose's default is 32)");
  }
  return ceil_div(sequence_length, num_gpus);
}

int workers_per_rank(int num_workers, const Env& env, int cores_per_node, int ranks_per_node,
                     std::vector<std::string>* warnings) {
  ranks_per_node = std::max(ranks_per_node, 1);
  cores_per_node = std::max(cores_per_node, 1);
  int workers = 0;
  std::string source;
  if (num_workers >= 0) {
    workers = num_workers;
    source = "training.num_workers";
  } else if (auto cpus = env_int(env, "SLURM_CPUS_PER_TASK")) {
    workers = std::clamp(static_cast<int>(*cpus) - 1, 0, kMaxWorkersPerRank);
    source = "SLURM_CPUS_PER_TASK-1";
  } else {
    workers = std::clamp(cores_per_node / ranks_per_node - 1, 0, kMaxWorkersPerRank);
    source = "cores/ranks-1";
  }
  const int node_cores = static_cast<int>(env_int(env, "SLURM_CPUS_ON_NODE").value_or(cores_per_node));
  if (warnings && workers * ranks_per_node > node_cores) {
    warnings->push_back(std::to_string(workers) + " loader workers x " + std::to_string(ranks_per_node) +
                        " ranks = " + std::to_string(workers * ranks_per_node) + " threads on a node with " +
                        std::to_string(node_cores) + " cores (" + source +
                        "): the node is over-subscribed (hint: lower training.num_workers or raise --cpus-per-task)");
  }
  return workers;
}

ComputeThreads compute_threads_per_rank(const Env& env, int usable_cpus, int sharers) {
  usable_cpus = std::max(usable_cpus, 1);
  sharers = std::max(sharers, 1);
  if (const auto omp = env_get(env, "OMP_NUM_THREADS")) {
    const int n = std::atoi(omp->c_str());  // "4" or "4,2": the outer level counts
    if (n > 0) return {n, "OMP_NUM_THREADS"};
  }
  if (const auto cpus = env_int(env, "SLURM_CPUS_PER_TASK"); cpus && *cpus > 0)
    return {static_cast<int>(std::min<long long>(*cpus, usable_cpus)), "SLURM_CPUS_PER_TASK"};
  if (sharers == 1) return {usable_cpus, "the CPUs this rank is bound to"};
  return {std::max(1, usable_cpus / sharers),
          std::to_string(usable_cpus) + " CPUs shared by " + std::to_string(sharers) + " ranks"};
}

const std::vector<std::string>& lr_scaling_names() {
  static const std::vector<std::string> names = {"none", "linear", "sqrt"};
  return names;
}

LrScaling parse_lr_scaling(const std::string& mode) {
  if (mode == "none") return LrScaling::none;
  if (mode == "linear") return LrScaling::linear;
  if (mode == "sqrt") return LrScaling::sqrt;
  throw UserError("training.lr_scaling=\"" + mode + "\" is not one of " + join_names(lr_scaling_names()),
                  "none keeps learning_rate; linear and sqrt scale it by the effective global batch over "
                  "reference_batch_size");
}

double scaled_learning_rate(double base_lr, const std::string& mode, int effective_batch, int reference_batch) {
  const LrScaling scaling = parse_lr_scaling(mode);
  if (scaling == LrScaling::none) return base_lr;
  if (reference_batch < 1) {
    throw UserError("training.reference_batch_size=" + std::to_string(reference_batch) + " must be at least 1",
                    "it is the global batch the learning rate was tuned for");
  }
  const double ratio = static_cast<double>(effective_batch) / reference_batch;
  return scaling == LrScaling::linear ? base_lr * ratio : base_lr * std::sqrt(ratio);
}

}  // namespace trainer::runtime
