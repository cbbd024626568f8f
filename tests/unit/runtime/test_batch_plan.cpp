// lightning-pose's batch formulas with its test vectors, workers per rank, lr scaling.
#include <cmath>  // std::sqrt

#include <catch2/catch.hpp>

#include "runtime/batch_plan.hpp"
#include "user_error_matchers.hpp"

using namespace trainer;
using namespace trainer::runtime;
using trainer::test::require_user_error;

TEST_CASE("batch: per-GPU train/val batch is ceil(B / G) (lightning-pose vectors, 2 GPUs)", "[runtime]") {
  CHECK(per_gpu_batch(4, 2, "train_batch_size") == 2);
  CHECK(per_gpu_batch(16, 2, "val_batch_size") == 8);
  CHECK(per_gpu_batch(5, 2, "train_batch_size") == 3);   // odd sizes round up
  CHECK(per_gpu_batch(15, 2, "train_batch_size") == 8);
  CHECK(per_gpu_batch(1, 2, "train_batch_size") == 1);
  CHECK(per_gpu_batch(30, 8, "train_batch_size") == 4);
  CHECK(per_gpu_batch(16, 1, "train_batch_size") == 16);
}

TEST_CASE("batch: num_gpus 0 is treated as 1 with a warning", "[runtime]") {
  std::vector<std::string> warnings;
  CHECK(per_gpu_batch(16, 0, "train_batch_size", &warnings) == 16);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("num_gpus=0 treated as 1") != std::string::npos);
}

TEST_CASE("batch: a global batch below 1 is an error", "[runtime]") {
  require_user_error([] { per_gpu_batch(0, 2, "train_batch_size"); }, "training.train_batch_size=0");
}

TEST_CASE("batch: context batch is ceil((B - 4) / G) + 4 (lightning-pose vectors, 2 GPUs)", "[runtime]") {
  CHECK(per_gpu_context_batch(6, 2) == 5);
  CHECK(per_gpu_context_batch(5, 2) == 5);
  CHECK(per_gpu_context_batch(28, 2) == 16);
  CHECK(per_gpu_context_batch(27, 2) == 16);
  CHECK(per_gpu_context_batch(16, 1) == 16);
  CHECK(per_gpu_context_batch(27, 8) == 7);
}

TEST_CASE("batch: unlabelled frames are ceil(L / G), and L below G is an error", "[runtime]") {
  CHECK(per_gpu_unlabeled_frames(32, 1) == 32);
  CHECK(per_gpu_unlabeled_frames(32, 2) == 16);
  CHECK(per_gpu_unlabeled_frames(32, 3) == 11);
  CHECK(per_gpu_unlabeled_frames(8, 8) == 1);
  CHECK(per_gpu_unlabeled_frames(16, 0) == 16);
  require_user_error([] { per_gpu_unlabeled_frames(3, 4); }, "sequence_length=3 is smaller than the 4");
}

TEST_CASE("batch: a context batch below 5 per GPU is an error showing the value", "[runtime]") {
  const auto e = trainer::test::user_error_of([] { per_gpu_context_batch(4, 2); });
  const std::string message = e.what();
  CHECK(message.find("context_batch_size (lightning-pose: dali.context.train.batch_size) = 4") != std::string::npos);
  CHECK(message.find("gives 4 context frames per GPU") != std::string::npos);
  CHECK(message.find('{') == std::string::npos);  // lightning-pose's slip: literal braces
  require_user_error([] { per_gpu_context_batch(2, 2); }, "gives 3 context frames");  // ceil(-1)+4 = 3
  require_user_error([] { per_gpu_context_batch(0, 1); }, "gives 0 context frames");
}

TEST_CASE("workers: an explicit num_workers wins", "[runtime]") {
  std::vector<std::string> w;
  CHECK(workers_per_rank(3, {{"SLURM_CPUS_PER_TASK", "16"}}, 64, 2, &w) == 3);
  CHECK(workers_per_rank(0, {}, 64, 2, &w) == 0);
  CHECK(workers_per_rank(12, {}, 64, 2, &w) == 12);  // not capped: the user asked
  CHECK(w.empty());
}

TEST_CASE("workers: SLURM_CPUS_PER_TASK - 1, at least 0, at most 8", "[runtime]") {
  std::vector<std::string> w;
  CHECK(workers_per_rank(-1, {{"SLURM_CPUS_PER_TASK", "4"}}, 2, 2, &w) == 3);
  CHECK(workers_per_rank(-1, {{"SLURM_CPUS_PER_TASK", "1"}}, 64, 2, &w) == 0);
  CHECK(workers_per_rank(-1, {{"SLURM_CPUS_PER_TASK", "0"}}, 64, 2, &w) == 0);
  CHECK(workers_per_rank(-1, {{"SLURM_CPUS_PER_TASK", "20"}}, 64, 2, &w) == 8);
}

TEST_CASE("workers: without SLURM, cores per node / ranks per node - 1, capped at 8", "[runtime]") {
  std::vector<std::string> w;
  CHECK(workers_per_rank(-1, {}, 16, 2, &w) == 7);
  CHECK(workers_per_rank(-1, {}, 64, 2, &w) == 8);
  CHECK(workers_per_rank(-1, {}, 2, 4, &w) == 0);
  CHECK(workers_per_rank(-1, {}, 12, 4, &w) == 2);
  CHECK(workers_per_rank(-1, {{"SLURM_CPUS_PER_TASK", "oops"}}, 16, 2, &w) == 7);  // unreadable: ignored
  CHECK(w.empty());
}

TEST_CASE("workers: warns when the workers of a node exceed its cores", "[runtime]") {
  std::vector<std::string> w;
  CHECK(workers_per_rank(8, {}, 8, 2, &w) == 8);
  REQUIRE(w.size() == 1);
  CHECK(w[0].find("8 loader workers x 2 ranks = 16 threads on a node with 8 cores") != std::string::npos);
  w.clear();
  // Under SLURM the node's cores are SLURM_CPUS_ON_NODE.
  workers_per_rank(-1, {{"SLURM_CPUS_PER_TASK", "8"}, {"SLURM_CPUS_ON_NODE", "8"}}, 64, 4, &w);
  REQUIRE(w.size() == 1);
  CHECK(w[0].find("28 threads on a node with 8 cores") != std::string::npos);
  w.clear();
  workers_per_rank(-1, {{"SLURM_CPUS_PER_TASK", "8"}, {"SLURM_CPUS_ON_NODE", "32"}}, 2, 4, &w);
  CHECK(w.empty());
}

TEST_CASE("learning rate scaling: none, linear, sqrt against reference_batch_size", "[runtime]") {
  CHECK(scaled_learning_rate(1e-3, "none", 64, 16) == Approx(1e-3));
  CHECK(scaled_learning_rate(1e-3, "linear", 64, 16) == Approx(4e-3));
  CHECK(scaled_learning_rate(1e-3, "sqrt", 64, 16) == Approx(2e-3));
  CHECK(scaled_learning_rate(1e-3, "linear", 8, 16) == Approx(5e-4));
  CHECK(scaled_learning_rate(1e-3, "sqrt", 32, 16) == Approx(1e-3 * std::sqrt(2.0)));
  require_user_error([] { scaled_learning_rate(1e-3, "cubic", 64, 16); }, "lr_scaling=\"cubic\"");
  require_user_error([] { scaled_learning_rate(1e-3, "linear", 64, 0); }, "reference_batch_size=0");
}

TEST_CASE("compute threads: OMP_NUM_THREADS, else SLURM_CPUS_PER_TASK, else the rank's share of its CPUs",
          "[runtime]") {
  // OMP_NUM_THREADS wins, its outer level for a nested list; not capped: the user asked.
  CHECK(compute_threads_per_rank({{"OMP_NUM_THREADS", "6,2"}, {"SLURM_CPUS_PER_TASK", "4"}}, 2, 2).threads == 6);
  CHECK(compute_threads_per_rank({{"OMP_NUM_THREADS", "6"}}, 2, 2).source == "OMP_NUM_THREADS");
  // A malformed or zero OMP_NUM_THREADS falls through to the next rule.
  CHECK(compute_threads_per_rank({{"OMP_NUM_THREADS", "x"}}, 8, 1).threads == 8);
  // SLURM_CPUS_PER_TASK, no more than the CPUs the rank may run on.
  const ComputeThreads slurm = compute_threads_per_rank({{"SLURM_CPUS_PER_TASK", "4"}}, 16, 4);
  CHECK(slurm.threads == 4);
  CHECK(slurm.source == "SLURM_CPUS_PER_TASK");
  CHECK(compute_threads_per_rank({{"SLURM_CPUS_PER_TASK", "8"}}, 2, 1).threads == 2);
  // Unbound ranks share the node's CPUs: 64 CPUs, 4 ranks on all of them.
  const ComputeThreads shared = compute_threads_per_rank({}, 64, 4);
  CHECK(shared.threads == 16);
  CHECK(shared.source == "64 CPUs shared by 4 ranks");
  // Socket binding, two ranks per 16-core socket: 8 each. Core binding: 1.
  CHECK(compute_threads_per_rank({}, 16, 2).threads == 8);
  const ComputeThreads bound = compute_threads_per_rank({}, 1, 1);
  CHECK(bound.threads == 1);
  CHECK(bound.source == "the CPUs this rank is bound to");
  // Never 0: more ranks than CPUs, or nothing known.
  CHECK(compute_threads_per_rank({}, 2, 8).threads == 1);
  CHECK(compute_threads_per_rank({}, 0, 0).threads == 1);
}
