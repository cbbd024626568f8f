// plan_run / plan_hypothetical: accelerator and backend resolution, device per rank,
// batch sizes, warnings, and the report formats.
#include <catch2/catch.hpp>

#include "runtime/plan_report.hpp"
#include "runtime/run_plan.hpp"
#include "runtime/visible_gpus.hpp"
#include "user_error_matchers.hpp"

using namespace trainer;
using namespace trainer::runtime;
using trainer::Config;
using trainer::test::require_user_error;

namespace {
bool contains(const std::vector<std::string>& items, const std::string& part) {
  for (const auto& s : items) {
    if (s.find(part) != std::string::npos) return true;
  }
  return false;
}
World node_world(int rank, int nodes, int per_node) {
  World w = hypothetical_world(rank, nodes, per_node);
  w.launched_by = "mpirun";
  return w;
}
}  // namespace

TEST_CASE("accelerator: cpu, gpu, auto", "[runtime]") {
  std::string note;
  CHECK(resolve_accelerator("cpu", 4, false, &note) == "cpu");
  CHECK(resolve_accelerator("gpu", 2, false, &note) == "gpu");
  CHECK(resolve_accelerator("auto", 2, false, &note) == "gpu");
  CHECK(note.find("chose gpu") != std::string::npos);
  CHECK(resolve_accelerator("auto", 0, false, &note) == "cpu");
  CHECK(note.find("chose cpu") != std::string::npos);
  CHECK(resolve_accelerator("auto", 2, true, &note) == "cpu");  // devices=0
  require_user_error([] { resolve_accelerator("gpu", 0, false, nullptr); }, "accelerator=gpu", "accelerator=cpu");
  require_user_error([] { resolve_accelerator("tpu", 0, false, nullptr); }, "accelerator=\"tpu\"");
}

TEST_CASE("backend: nccl needs GPUs; auto is nccl on GPU, gloo on CPU", "[runtime]") {
  CHECK(resolve_backend("auto", "gpu") == "nccl");
  CHECK(resolve_backend("auto", "cpu") == "gloo");
  CHECK(resolve_backend("mpi", "cpu") == "mpi");
  CHECK(resolve_backend("gloo", "gpu") == "gloo");
  CHECK(resolve_backend("nccl", "gpu") == "nccl");
  require_user_error([] { resolve_backend("nccl", "cpu"); }, "backend=nccl needs GPUs", "gloo or backend=mpi");
  require_user_error([] { resolve_backend("smoke", "cpu"); }, "backend=\"smoke\"");
}

TEST_CASE("plan: 2 nodes x 4 GPUs, each rank its local GPU and an eighth of the batch",
          "[runtime]") {
  Config config;
  config.training.train_batch_size = 32;
  config.training.val_batch_size = 30;
  for (int rank = 0; rank < 8; ++rank) {
    const RunPlan plan = plan_run(config, node_world(rank, 2, 4), 4, {}, 64);
    CHECK(plan.accelerator == "gpu");
    CHECK(plan.backend == "nccl");
    CHECK(plan.data_parallel_ranks == 8);
    CHECK(plan.rank.device == rank % 4);
    CHECK(plan.rank.node_rank == rank / 4);
    CHECK(plan.rank.train_batch_size == 4);
    CHECK(plan.rank.val_batch_size == 4);
    CHECK(plan.rank.test_batch_size == 32);
    CHECK(plan.rank.context_batch_size == -1);
    CHECK(plan.rank.num_workers == 8);  // 64 cores / 4 ranks - 1 = 15, capped at 8
  }
}

TEST_CASE("plan: CPU ranks divide the batch too; devices is ignored with a warning", "[runtime]") {
  Config config;
  config.distributed.devices = "2";
  config.training.train_batch_size = 15;
  const RunPlan plan = plan_run(config, node_world(1, 1, 2), 0, {}, 8);
  CHECK(plan.accelerator == "cpu");
  CHECK(plan.backend == "gloo");
  CHECK(plan.rank.device == -1);
  CHECK(plan.rank.train_batch_size == 8);
  CHECK(plan.effective_train_batch == 16);
  CHECK(plan.rank.num_workers == 3);
  CHECK(contains(plan.warnings, "effective global batch is 16, not 15"));
  CHECK(contains(plan.warnings, "devices=\"2\" is ignored on the CPU"));
}

TEST_CASE("plan: heatmap_mhcrnn with unsupervised losses gets a context batch; lr scales with the effective batch",
          "[runtime]") {
  Config config;
  config.model.model_type = "heatmap_mhcrnn";
  config.model.losses_to_use = {"temporal"};
  config.training.context_batch_size = 28;
  config.training.lr_scaling = "linear";
  config.training.reference_batch_size = 8;
  config.training.learning_rate = 1e-3;
  const RunPlan plan = plan_run(config, node_world(0, 1, 2), 2, {}, 8);
  CHECK(plan.rank.context_batch_size == 16);
  CHECK(plan.learning_rate == Approx(2e-3));  // 16 / 8
  config.training.context_batch_size = 4;
  require_user_error([&] { plan_run(config, node_world(0, 1, 2), 2, {}, 8); }, "gives 4 context frames");
  // Supervised, it never reads the context batch (lightning-pose checks it only then too).
  config.model.losses_to_use.clear();
  CHECK(plan_run(config, node_world(0, 1, 2), 2, {}, 8).rank.context_batch_size == -1);
}

TEST_CASE("plan: errors surface (too many ranks, devices vs ntasks-per-node, launcher)", "[runtime]") {
  Config config;
  config.distributed.devices = "[0, 1]";
  require_user_error([&] { plan_run(config, node_world(0, 1, 4), 4, {}, 8); }, "4 ranks run on this node",
                     "--ntasks-per-node=2");
  const Env slurm = {{"SLURM_JOB_ID", "1"}, {"SLURM_NTASKS_PER_NODE", "4"}, {"SLURM_NTASKS", "4"},
                     {"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "0"}};
  World w = node_world(0, 1, 4);
  w.launched_by = "srun";
  require_user_error([&] { plan_run(config, w, 4, slurm, 8); }, "--ntasks-per-node=4", "--ntasks-per-node=2");
  Config plain;
  require_user_error([&] { plan_run(plain, node_world(0, 1, 1), 0, {{"SLURM_NTASKS", "2"}}, 8); }, "SLURM_NTASKS=2");
  plain.distributed.accelerator = "gpu";
  require_user_error([&] { plan_run(plain, node_world(0, 1, 1), 0, {}, 8); }, "accelerator=gpu");
}

TEST_CASE("plan: a self-spawned world is not cross-checked against the launcher's environment", "[runtime]") {
  Config config;
  World w = hypothetical_world(1, 1, 3);
  w.launched_by = "self-spawn";
  // A spawned child sees OMPI_COMM_WORLD_SIZE of its own spawn group, not the merged world.
  CHECK_NOTHROW(plan_run(config, w, 0, {{"OMPI_COMM_WORLD_SIZE", "2"}}, 8));
}

TEST_CASE("plan: num_gpus that disagrees with the world is reported", "[runtime]") {
  Config config;
  config.training.num_gpus = 4;
  const RunPlan plan = plan_run(config, node_world(0, 1, 2), 0, {}, 8);
  CHECK(plan.rank.train_batch_size == 8);
  CHECK(contains(plan.warnings, "training.num_gpus=4 is ignored"));
}

TEST_CASE("plan: CPU compute threads from the ranks' CPU masks; a binding that idles the node is reported",
          "[runtime]") {
  Config config;
  // No masks (a hypothetical world): the node's 8 cores over its 2 ranks.
  CHECK(plan_run(config, node_world(1, 1, 2), 0, {}, 8).rank.compute_threads == 4);
  // Masks: unbound ranks share all 8 CPUs; Open MPI's one core per rank gives 1 thread, and
  // the node's first rank warns that 6 of 8 CPUs stay idle.
  World unbound = node_world(0, 1, 2);
  unbound.usable_cpus = 8, unbound.cpu_sharers = 2, unbound.node_cpus = 8;
  const RunPlan shared = plan_run(config, unbound, 0, {}, 8);
  CHECK(shared.rank.compute_threads == 4);
  CHECK(shared.rank.compute_threads_source == "8 CPUs shared by 2 ranks");
  CHECK_FALSE(contains(shared.rank.warnings, "binding"));
  World bound = node_world(0, 1, 2);
  bound.usable_cpus = 1, bound.cpu_sharers = 1, bound.node_cpus = 2;
  const RunPlan one_core = plan_run(config, bound, 0, {}, 8);
  CHECK(one_core.rank.compute_threads == 1);
  CHECK(contains(one_core.rank.warnings, "may run on 2 of its 8 CPUs (the launcher's binding)"));
  CHECK(contains(one_core.rank.warnings, "--bind-to none"));
  bound.rank = 1, bound.local_rank = 1;
  CHECK(plan_run(config, bound, 0, {}, 8).rank.warnings.empty());  // once per node
  // Under SLURM, against the job's CPUs on the node: 2 of 2 is all of them; 2 of 16 is not.
  bound.rank = 0, bound.local_rank = 0;
  CHECK_FALSE(contains(plan_run(config, bound, 0, {{"SLURM_CPUS_ON_NODE", "2"}}, 8).rank.warnings, "binding"));
  CHECK(contains(plan_run(config, bound, 0, {{"SLURM_CPUS_ON_NODE", "16"}}, 8).rank.warnings,
                 "may run on 2 of its 16 CPUs"));
  CHECK_FALSE(contains(plan_run(config, bound, 0, {{"OMP_NUM_THREADS", "1"}}, 8).rank.warnings, "binding"));
  // GPUs: no CPU compute threads.
  if (built_with_cuda()) CHECK(plan_run(config, node_world(0, 1, 2), 2, {}, 8).rank.compute_threads == 0);
}

TEST_CASE("plan: over-subscribed workers are reported once per node", "[runtime]") {
  Config config;
  config.training.num_workers = 4;
  CHECK(contains(plan_run(config, node_world(0, 1, 2), 0, {}, 4).rank.warnings, "over-subscribed"));
  CHECK(plan_run(config, node_world(1, 1, 2), 0, {}, 4).rank.warnings.empty());
}

TEST_CASE("plan: the unlabelled-video workers count towards over-subscription", "[runtime]") {
  Config config;
  config.training.num_workers = 1;  // 1 loader worker x 2 ranks fit 4 cores ...
  CHECK(plan_run(config, node_world(0, 1, 2), 0, {}, 4).rank.unlabeled_workers == 0);
  CHECK_FALSE(contains(plan_run(config, node_world(0, 1, 2), 0, {}, 4).rank.warnings, "over-subscribed"));
  config.model.losses_to_use = {"temporal"};  // ... but not with a decoding thread each
  const RankPlan semi = plan_run(config, node_world(0, 1, 2), 0, {}, 3).rank;
  CHECK(semi.unlabeled_workers == 1);
  CHECK(contains(semi.warnings, "1 loader + 1 unlabelled-video workers x 2 ranks = 4 threads"));
  config.training.num_workers = 0;  // no loader workers: still one decoding thread
  CHECK(plan_run(config, node_world(0, 1, 2), 0, {}, 4).rank.unlabeled_workers == 1);
}

TEST_CASE("plan: derived workers are split between the loader and the unlabelled video's decoding", "[runtime]") {
  Config config;  // num_workers -1: the plan's own count, cores / ranks - 1
  config.model.losses_to_use = {"pca_singleview"};
  const RankPlan four = plan_run(config, node_world(0, 4, 4), 0, {}, 32).rank;  // 32 / 4 - 1 = 7
  CHECK(four.num_workers == 4);
  CHECK(four.unlabeled_workers == 3);
  CHECK_FALSE(contains(four.warnings, "over-subscribed"));
  const RankPlan one = plan_run(config, node_world(0, 1, 1), 0, {}, 2).rank;  // 2 / 1 - 1 = 1
  CHECK(one.num_workers == 1);
  CHECK(one.unlabeled_workers == 1);
  config.training.num_workers = 7;  // explicit: each pool gets it
  const RankPlan given = plan_run(config, node_world(0, 4, 4), 0, {}, 32).rank;
  CHECK(given.num_workers == 7);
  CHECK(given.unlabeled_workers == 7);
  CHECK(contains(given.warnings, "over-subscribed"));
}

TEST_CASE("plan: hypothetical cluster, as under sbatch --cpus-per-task", "[runtime]") {
  Config config;
  ClusterShape shape;
  shape.nodes = 2;
  shape.gpus_per_node = 4;
  shape.cpus_per_task = 5;
  const auto plans = plan_hypothetical(config, shape);
  REQUIRE(plans.size() == 8);
  CHECK(plans[5].rank.device == 1);
  CHECK(plans[5].rank.node_rank == 1);
  CHECK(plans[5].rank.num_workers == 4);
  CHECK(plans[0].launched_by == "hypothetical");
  CHECK(plans[0].rank.warnings.empty());
  shape.nodes = 0;
  require_user_error([&] { plan_hypothetical(config, shape); }, "--nodes");
}

TEST_CASE("report: JSON and text carry every rank", "[runtime]") {
  Config config;
  const RunPlan plan = plan_run(config, node_world(0, 1, 2), 0, {}, 8);
  RankPlan other = plan.rank;
  other.rank = 1;
  other.local_rank = 1;
  other.hostname = "host \"b\"";
  other.warnings = {"tab\there"};
  const std::string json = plan_json(plan, {rank_object_json(plan.rank), rank_object_json(other)}, false);
  CHECK(json.find("\"world_size\": 2") != std::string::npos);
  CHECK(json.find("\"hostname\": \"host \\\"b\\\"\"") != std::string::npos);
  CHECK(json.find("\"warnings\": [\"tab\\there\"]") != std::string::npos);
  CHECK(json.find("\"context_batch_size\": null") != std::string::npos);
  const std::string text = plan_text(plan, {rank_row_text(plan.rank), rank_row_text(other)});
  CHECK(text.find("accelerator: cpu") != std::string::npos);
  CHECK(text.find("warning: [rank 1] tab") != std::string::npos);
  CHECK(json_quote(std::string("a\x01")) == "\"a\\u0001\"");
}

TEST_CASE("visible GPUs: 0 in a CPU-only build", "[runtime]") {
  if (!built_with_cuda()) CHECK(visible_gpu_count() == 0);
  CHECK(visible_gpu_count() >= 0);
}
