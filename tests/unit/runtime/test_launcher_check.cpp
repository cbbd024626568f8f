// Launcher cross-checks with injected environments: srun without PMI, mpirun of
// another MPI, --ntasks without --ntasks-per-node, num_nodes, devices vs tasks.
#include <catch2/catch.hpp>

#include "runtime/launcher_check.hpp"
#include "user_error_matchers.hpp"

using namespace trainer;
using namespace trainer::runtime;
using trainer::test::require_user_error;

namespace {
// What srun exports to each task of a 2-task step with PMIx.
Env srun_env(const std::string& ntasks, const std::string& procid) {
  return {{"SLURM_JOB_ID", "42"},        {"SLURM_NTASKS", ntasks},    {"SLURM_STEP_NUM_TASKS", ntasks},
          {"SLURM_PROCID", procid},      {"SLURM_STEP_ID", "0"},      {"SLURM_NTASKS_PER_NODE", ntasks},
          {"SLURM_NNODES", "1"},         {"PMIX_RANK", procid}};
}
}  // namespace

TEST_CASE("launcher: detected from the environment", "[runtime]") {
  CHECK(detect_launcher({}) == Launcher::none);
  CHECK(detect_launcher({{"OMPI_COMM_WORLD_SIZE", "2"}}) == Launcher::mpirun);
  CHECK(detect_launcher(srun_env("2", "1")) == Launcher::srun);
  CHECK(detect_launcher({{"SLURM_JOB_ID", "1"}, {"SLURM_NTASKS", "2"}}) == Launcher::none);  // batch script
  CHECK(std::string(launcher_name(Launcher::srun)) == "srun");
}

TEST_CASE("launcher: matching worlds pass", "[runtime]") {
  CHECK(check_launcher({}, 1).empty());
  CHECK(check_launcher(srun_env("2", "0"), 2).empty());
  CHECK(check_launcher({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "3"}}, 4).empty());
  CHECK(check_launcher({{"SLURM_NTASKS", "1"}, {"SLURM_JOB_ID", "1"}}, 1).empty());
  // mpirun inside an allocation: Open MPI's count is the one that matters.
  CHECK(check_launcher({{"OMPI_COMM_WORLD_SIZE", "4"}, {"SLURM_NTASKS", "2"}}, 4).empty());
  CHECK_NOTHROW(check_pmi_before_init(srun_env("2", "0")));
  CHECK_NOTHROW(check_pmi_before_init({}));
}

TEST_CASE("launcher: srun tasks that are each 'rank 0 of 1' are an error", "[runtime]") {
  require_user_error([] { check_launcher(srun_env("2", "1"), 1); },
                     "srun started 2 tasks (SLURM_NTASKS=2) but MPI sees a world of 1 in each", "srun --mpi=pmix");
  require_user_error([] { check_launcher(srun_env("4", "0"), 1); }, "rank 0 of 1", "srun --mpi=pmix");
}

TEST_CASE("launcher: SLURM_NTASKS=N on a singleton outside srun is an error", "[runtime]") {
  require_user_error([] { check_launcher({{"SLURM_NTASKS", "2"}}, 1); },
                     "this SLURM job has 2 tasks (SLURM_NTASKS=2) but the trainer runs as a world of 1",
                     "srun --mpi=pmix");
}

TEST_CASE("launcher: srun without any PMI is caught before MPI_Init", "[runtime]") {
  Env env = srun_env("2", "0");
  env.erase("PMIX_RANK");
  require_user_error([&] { check_pmi_before_init(env); }, "srun started 2 tasks (SLURM_STEP_NUM_TASKS=2) without a PMI",
                     "srun --mpi=pmix");
  env["PMI_FD"] = "11";  // pmi2 is a PMI too
  CHECK_NOTHROW(check_pmi_before_init(env));
  Env one = srun_env("1", "0");
  one.erase("PMIX_RANK");
  CHECK_NOTHROW(check_pmi_before_init(one));  // a single task needs no PMI
}

TEST_CASE("launcher: OMPI_COMM_WORLD_SIZE different from MPI's world is an error", "[runtime]") {
  require_user_error([] { check_launcher({{"OMPI_COMM_WORLD_SIZE", "4"}}, 1); },
                     "mpirun started 4 processes (OMPI_COMM_WORLD_SIZE=4) but MPI sees a world of 1", "which mpirun");
}

TEST_CASE("launcher: --ntasks without --ntasks-per-node warns with a hint", "[runtime]") {
  Env env = srun_env("8", "0");
  env.erase("SLURM_NTASKS_PER_NODE");
  const auto warnings = check_launcher(env, 8);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("--ntasks=8 without --ntasks-per-node") != std::string::npos);
  CHECK(warnings[0].find("hint: use --nodes=N with --ntasks-per-node") != std::string::npos);
}

TEST_CASE("launcher: num_nodes against SLURM_NNODES and the world", "[runtime]") {
  CHECK_NOTHROW(check_num_nodes(0, 3, {{"SLURM_NNODES", "2"}}));  // 0: from the launcher
  CHECK_NOTHROW(check_num_nodes(2, 2, {{"SLURM_NNODES", "2"}}));
  require_user_error([] { check_num_nodes(2, 1, {{"SLURM_NNODES", "1"}}); },
                     "distributed.num_nodes=2 but the SLURM job has 1 node(s) (SLURM_NNODES=1)", "--nodes=2");
  require_user_error([] { check_num_nodes(2, 1, {}); }, "the launched ranks span 1 node(s)");
}

TEST_CASE("launcher: devices against --ntasks-per-node (Lightning's check)", "[runtime]") {
  const Env env = {{"SLURM_JOB_ID", "1"}, {"SLURM_NTASKS_PER_NODE", "1"}};
  require_user_error([&] { check_devices_vs_ntasks_per_node("2", 2, env); },
                     "devices=\"2\" asks for 2 GPU(s) per node but the SLURM job has --ntasks-per-node=1",
                     "--ntasks-per-node=2");
  CHECK_NOTHROW(check_devices_vs_ntasks_per_node("1", 1, env));
  CHECK_NOTHROW(check_devices_vs_ntasks_per_node("2", 2, {}));                       // not SLURM
  CHECK_NOTHROW(check_devices_vs_ntasks_per_node("2", 2, {{"SLURM_JOB_ID", "1"}}));  // no --ntasks-per-node
}
