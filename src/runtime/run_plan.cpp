#include "runtime/run_plan.hpp"

#include <algorithm>  // std::max, std::find
#include <cstdint>    // std::int64_t
#include <limits>     // std::numeric_limits
#include <utility>    // std::pair
#include <thread>     // std::thread::hardware_concurrency

#include "runtime/batch_plan.hpp"      // per_gpu_batch, workers_per_rank, scaled_learning_rate
#include "runtime/devices.hpp"         // parse_devices, select_device
#include "runtime/launcher_check.hpp"  // check_launcher, check_num_nodes
#include "runtime/visible_gpus.hpp"    // built_with_cuda
#include "util/env.hpp"                // env_int
#include "util/error.hpp"              // UserError
#include "util/name_list.hpp"          // join_names

namespace trainer::runtime {

const std::vector<std::string>& accelerator_names() {
  static const std::vector<std::string> names = {"auto", "cpu", "gpu"};
  return names;
}

const std::vector<std::string>& backend_names() {
  static const std::vector<std::string> names = {"auto", "nccl", "mpi", "gloo"};
  return names;
}

std::string resolve_accelerator(const std::string& requested, int visible_gpus, bool devices_ask_for_none,
                                std::string* note) {
  if (requested == "cpu") return "cpu";
  if (requested == "gpu") {
    if (visible_gpus > 0) return "gpu";
    if (!built_with_cuda()) {
      throw UserError("accelerator=gpu but this trainer was built without the GPU path",
                      "use accelerator=cpu, or rebuild with -DTRAINER_CUDA=ON on a machine with the CUDA toolkit");
    }
    throw UserError("accelerator=gpu but no GPU is visible to this process",
                    "check CUDA_VISIBLE_DEVICES, nvidia-smi and the job's --gres=gpu:N; or use accelerator=cpu");
  }
  if (requested == "auto") {
    if (visible_gpus > 0 && !devices_ask_for_none) {
      if (note) *note = "auto: " + std::to_string(visible_gpus) + " GPU(s) visible, chose gpu";
      return "gpu";
    }
    if (note) {
      *note = devices_ask_for_none ? "auto: devices selects no GPU, chose cpu"
              : built_with_cuda()  ? "auto: no GPU visible, chose cpu"
                                   : "auto: built without the GPU path, chose cpu";
    }
    return "cpu";
  }
  throw UserError("distributed.accelerator=\"" + requested + "\" is not one of " + join_names(accelerator_names()),
                  "auto uses the GPUs when there are any, else the CPU");
}

std::string resolve_backend(const std::string& requested, const std::string& accelerator) {
  if (requested == "auto") return accelerator == "gpu" ? "nccl" : "gloo";
  if (requested == "nccl") {
    if (accelerator != "gpu") {
      throw UserError("backend=nccl needs GPUs, but this run uses the CPU",
                      "use backend=gloo or backend=mpi for CPU runs (or backend=auto)");
    }
    return "nccl";
  }
  if (requested == "mpi" || requested == "gloo") return requested;
  throw UserError("distributed.backend=\"" + requested + "\" is not one of " + join_names(backend_names()),
                  "auto is nccl on GPUs and gloo on CPUs");
}

namespace {

std::string plural_ranks(int n) { return std::to_string(n) + (n == 1 ? " rank" : " ranks"); }

}  // namespace

RunPlan plan_run(const Config& config, const World& world, int visible_gpus, const Env& env, int cores_per_node) {
  const auto& dist = config.distributed;
  const auto& training = config.training;
  RunPlan plan;
  plan.world_size = world.size;
  plan.num_nodes = world.num_nodes;
  plan.launched_by = world.launched_by;

  // Launcher cross-checks: a self-spawned world is ours, not the launcher's.
  if (world.launched_by != "self-spawn" && world.launched_by != "hypothetical") {
    for (auto& w : check_launcher(env, world.size)) plan.warnings.push_back(std::move(w));
  }
  check_num_nodes(dist.num_nodes, world.num_nodes, env);

  const DeviceRequest devices = parse_devices(dist.devices);
  plan.accelerator = resolve_accelerator(dist.accelerator, visible_gpus, devices.asks_for_none(),
                                         &plan.accelerator_note);
  plan.backend = resolve_backend(dist.backend, plan.accelerator);

  RankPlan& mine = plan.rank;
  mine.rank = world.rank;
  mine.local_rank = world.local_rank;
  mine.local_size = world.local_size;
  mine.node_rank = world.node_rank;
  mine.hostname = world.hostname;

  if (plan.accelerator == "gpu") {
    if (devices.is_set()) {
      const int per_node = devices.kind == DeviceRequest::Kind::count  ? devices.count
                           : devices.kind == DeviceRequest::Kind::list ? static_cast<int>(devices.ids.size())
                           : visible_gpus == 1                          ? world.local_size
                                                                        : visible_gpus;
      check_devices_vs_ntasks_per_node(devices.text, per_node, env);
    }
    std::string idle;
    mine.device = select_device(devices, visible_gpus, world.local_rank, world.local_size,
                                env_get(env, "CUDA_VISIBLE_DEVICES").value_or(""), &idle);
    if (!idle.empty()) mine.warnings.push_back(idle);
  } else {
    mine.device = -1;
    if (devices.is_set() && !devices.asks_for_none()) {
      plan.warnings.push_back("devices=\"" + devices.text +
                              "\" is ignored on the CPU: the ranks come from the launcher or --nprocs");
    }
  }

  // G: one data-parallel rank per GPU, or per CPU process.
  const int G = world.size;
  plan.data_parallel_ranks = G;
  if (training.num_gpus > 0 && training.num_gpus != G) {
    plan.warnings.push_back("training.num_gpus=" + std::to_string(training.num_gpus) + " is ignored: this run has " +
                            plural_ranks(G) + " (the batch is divided by " + std::to_string(G) + ")");
  }
  plan.train_batch_size = training.train_batch_size;
  plan.val_batch_size = training.val_batch_size;
  plan.context_batch_size = training.context_batch_size;
  mine.train_batch_size = per_gpu_batch(training.train_batch_size, G, "train_batch_size", &plan.warnings);
  mine.val_batch_size = per_gpu_batch(training.val_batch_size, G, "val_batch_size");
  mine.test_batch_size = per_gpu_batch(training.test_batch_size, 1, "test_batch_size");
  // The context batch is the unlabelled video frames of heatmap_mhcrnn's unsupervised
  // losses: a supervised run never reads it (lightning-pose checks it only then too).
  if (config.model.model_type == "heatmap_mhcrnn" && !config.model.losses_to_use.empty()) {
    mine.context_batch_size = per_gpu_context_batch(training.context_batch_size, G);
  }
  if (!config.model.losses_to_use.empty()) {
    // lightning-pose: dali.base.train.sequence_length frames for heatmap, and a
    // context batch of dali.context.train.batch_size frames for heatmap_mhcrnn,
    // divided over the GPUs like the labelled context batch.
    if (config.model.model_type == "heatmap_mhcrnn") {
      plan.unlabeled_sequence_length = training.context_batch_size;
      plan.unlabeled_context = true;
      mine.unlabeled_frames = mine.context_batch_size;
    } else {
      plan.unlabeled_sequence_length = training.unlabeled_sequence_length;
      mine.unlabeled_frames = per_gpu_unlabeled_frames(training.unlabeled_sequence_length, G);
      if (mine.unlabeled_frames * G != training.unlabeled_sequence_length)
        plan.warnings.push_back("dali.base.train.sequence_length=" + std::to_string(training.unlabeled_sequence_length) +
                                " over " + plural_ranks(G) + " is " + std::to_string(mine.unlabeled_frames) +
                                " unlabelled frames per rank: " + std::to_string(mine.unlabeled_frames * G) +
                                " a step, not " + std::to_string(training.unlabeled_sequence_length) +
                                " (hint: use a multiple of " + std::to_string(G) + ")");
      const auto& losses = config.model.losses_to_use;
      if (mine.unlabeled_frames < 2 && std::find(losses.begin(), losses.end(), "temporal") != losses.end())
        plan.warnings.push_back("the temporal loss compares consecutive unlabelled frames of one rank: with " +
                                std::to_string(mine.unlabeled_frames) + " frame per rank (dali.base.train."
                                "sequence_length=" + std::to_string(training.unlabeled_sequence_length) + " over " +
                                plural_ranks(G) + ") it is 0 at every step (hint: at least " + std::to_string(2 * G) +
                                " frames)");
    }
  }
  plan.effective_train_batch = mine.train_batch_size * G;
  plan.effective_val_batch = mine.val_batch_size * G;
  if (plan.effective_train_batch != training.train_batch_size) {
    plan.warnings.push_back("train_batch_size=" + std::to_string(training.train_batch_size) + " over " +
                            plural_ranks(G) + " is " + std::to_string(mine.train_batch_size) +
                            " per rank: the effective global batch is " +
                            std::to_string(plan.effective_train_batch) + ", not " +
                            std::to_string(training.train_batch_size) +
                            " (hint: use a multiple of " + std::to_string(G) + ")");
  }

  const int cores = cores_per_node > 0 ? cores_per_node
                                       : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  // Workers are a node-wide matter: the node's first rank reports over-subscription.
  std::vector<std::string> node_warnings;
  mine.num_workers = workers_per_rank(training.num_workers, env, cores, world.local_size, &node_warnings);
  if (mine.unlabeled_frames > 0) {
    // The unlabelled frames have decoding threads of their own (at least one). A count
    // the plan derived is the rank's share of the node, so the two pools split it
    // (7: 4 loader workers and 3 decoding threads); an explicit training.num_workers
    // gives each pool that many, and the warning below says when they over-subscribe.
    if (training.num_workers < 0) {
      const int share = mine.num_workers;
      mine.unlabeled_workers = std::max(1, share / 2);
      mine.num_workers = std::max(std::min(share, 1), share - mine.unlabeled_workers);
    } else {
      mine.unlabeled_workers = std::max(1, mine.num_workers);
    }
    const int threads = (mine.num_workers + mine.unlabeled_workers) * std::max(world.local_size, 1);
    const int node_cores = static_cast<int>(env_int(env, "SLURM_CPUS_ON_NODE").value_or(cores));
    if (node_warnings.empty() && threads > node_cores)
      node_warnings.push_back(std::to_string(mine.num_workers) + " loader + " + std::to_string(mine.unlabeled_workers) +
                              " unlabelled-video workers x " + std::to_string(std::max(world.local_size, 1)) +
                              " ranks = " + std::to_string(threads) + " threads on a node with " +
                              std::to_string(node_cores) +
                              " cores: the node is over-subscribed (hint: lower training.num_workers or raise "
                              "--cpus-per-task)");
  }
  if (plan.accelerator == "cpu") {
    // The ranks' affinity masks when known (world.cpp), else every rank of the node on
    // all of its CPUs (a hypothetical plan: SLURM's count for the node when given).
    const bool masks = world.usable_cpus > 0;
    const int node_cpus = static_cast<int>(env_int(env, "SLURM_CPUS_ON_NODE").value_or(cores));
    const ComputeThreads threads = compute_threads_per_rank(env, masks ? world.usable_cpus : node_cpus,
                                                            masks ? world.cpu_sharers : world.local_size);
    mine.compute_threads = threads.threads;
    mine.compute_threads_source = threads.source;
    // A launcher's binding that leaves most of the node (under SLURM: of the job's CPUs
    // there) idle; Open MPI binds each rank to one core when it starts 2 or fewer.
    if (masks && !env_get(env, "OMP_NUM_THREADS") && world.node_cpus * 2 <= node_cpus)
      node_warnings.push_back("its " + plural_ranks(world.local_size) + " may run on " +
                              std::to_string(world.node_cpus) + " of its " + std::to_string(node_cpus) +
                              " CPUs (the launcher's binding), so " + std::to_string(mine.compute_threads) +
                              " compute thread(s) per rank (hint: mpirun --bind-to none, or --map-by slot:PE=" +
                              std::to_string(std::max(1, node_cpus / std::max(world.local_size, 1))) + ")");
  }
  if (world.local_rank == 0) {
    for (const auto& w : node_warnings) mine.warnings.push_back("node " + world.hostname + ": " + w);
  }

  plan.lr_scaling = training.lr_scaling;
  plan.reference_batch_size = training.reference_batch_size;
  plan.base_learning_rate = training.learning_rate;
  plan.learning_rate = scaled_learning_rate(training.learning_rate, training.lr_scaling,
                                            plan.effective_train_batch, training.reference_batch_size);
  return plan;
}

std::vector<RunPlan> plan_hypothetical(const Config& config, const ClusterShape& shape) {
  if (shape.nodes < 1) throw UserError("--nodes must be at least 1");
  for (const auto& [option, value] : {std::pair{"--gpus-per-node", shape.gpus_per_node},
                                      std::pair{"--ranks-per-node", shape.ranks_per_node},
                                      std::pair{"--cores-per-node", shape.cores_per_node},
                                      std::pair{"--cpus-per-task", shape.cpus_per_task}})
    if (value < 0) throw UserError(std::string(option) + " cannot be negative, got " + std::to_string(value));
  const int ranks_per_node =
      shape.ranks_per_node > 0 ? shape.ranks_per_node : std::max(shape.gpus_per_node, 1);
  // Every rank is planned and printed: a world that overflows int, or would take
  // hours to list, is refused (the product is taken in 64 bits).
  const std::int64_t world = std::int64_t{shape.nodes} * ranks_per_node;
  if (world > kMaxPlannedRanks)
    throw UserError("--nodes " + std::to_string(shape.nodes) + " x " + std::to_string(ranks_per_node) +
                        " ranks per node is " + std::to_string(world) + " ranks, more than the " +
                        std::to_string(kMaxPlannedRanks) + " a plan lists",
                    "plan a smaller cluster: every node of the same shape gets the same plan");
  if (std::int64_t{shape.cpus_per_task} * ranks_per_node > std::numeric_limits<int>::max())
    throw UserError("--cpus-per-task " + std::to_string(shape.cpus_per_task) + " x " + std::to_string(ranks_per_node) +
                    " ranks per node is more CPUs than a node has");
  Env env;  // what SLURM would set for such a job
  if (shape.cpus_per_task > 0) {
    env["SLURM_CPUS_PER_TASK"] = std::to_string(shape.cpus_per_task);
    // SLURM gives the node at least what the tasks asked for.
    if (shape.cores_per_node == 0) env["SLURM_CPUS_ON_NODE"] = std::to_string(shape.cpus_per_task * ranks_per_node);
  }
  std::vector<RunPlan> plans;
  const int size = static_cast<int>(world);
  for (int rank = 0; rank < size; ++rank) {
    plans.push_back(plan_run(config, hypothetical_world(rank, shape.nodes, ranks_per_node), shape.gpus_per_node,
                             env, shape.cores_per_node));
  }
  return plans;
}

}  // namespace trainer::runtime
