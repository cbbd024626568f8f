#include "runtime/launcher_check.hpp"

#include "util/error.hpp"  // UserError

namespace trainer::runtime {

Launcher detect_launcher(const Env& env) {
  if (env_get(env, "OMPI_COMM_WORLD_SIZE")) return Launcher::mpirun;
  if (env_get(env, "SLURM_PROCID") && env_get(env, "SLURM_STEP_ID")) return Launcher::srun;
  return Launcher::none;
}

const char* launcher_name(Launcher launcher) {
  switch (launcher) {
    case Launcher::mpirun: return "mpirun";
    case Launcher::srun: return "srun";
    case Launcher::none: break;
  }
  return "none";
}

namespace {

// Tasks SLURM means to run in this step: the step's own count when inside srun,
// otherwise the job's --ntasks.
std::optional<long> slurm_tasks(const Env& env) {
  if (env_get(env, "SLURM_PROCID")) {
    if (auto step = env_int(env, "SLURM_STEP_NUM_TASKS")) return step;
  }
  return env_int(env, "SLURM_NTASKS");
}

const char* kPmiHint =
    "srun has no working PMI for this MPI: launch with `srun --mpi=pmix ./trainer ...` "
    "(`srun --mpi=list` shows the choices), or ask the admins for MpiDefault=pmix";

}  // namespace

void check_pmi_before_init(const Env& env) {
  if (detect_launcher(env) != Launcher::srun) return;
  const auto tasks = slurm_tasks(env);
  if (!tasks || *tasks <= 1) return;
  if (env_get(env, "PMIX_RANK") || env_get(env, "PMI_RANK") || env_get(env, "PMI_FD")) return;
  const std::string n = std::to_string(*tasks);
  const std::string type = env_get(env, "SLURM_MPI_TYPE").value_or("none");
  throw UserError("srun started " + n + " tasks (SLURM_STEP_NUM_TASKS=" + n + ") without a PMI (--mpi=" + type +
                      "): MPI cannot join them, each would be a singleton 'rank 0 of 1' training alone",
                  kPmiHint);
}

std::vector<std::string> check_launcher(const Env& env, int mpi_world_size) {
  std::vector<std::string> warnings;
  const std::string world = std::to_string(mpi_world_size);

  if (auto ompi_size = env_int(env, "OMPI_COMM_WORLD_SIZE")) {
    // mpirun set up N processes but MPI_Init did not join them: the binary was
    // built against another MPI than the mpirun that started it.
    if (*ompi_size != mpi_world_size) {
      throw UserError("mpirun started " + std::to_string(*ompi_size) + " processes (OMPI_COMM_WORLD_SIZE=" +
                          std::to_string(*ompi_size) + ") but MPI sees a world of " + world +
                          ": each process would train alone",
                      "use the mpirun of the MPI the trainer was built with (compare `which mpirun` "
                      "with `ldd trainer | grep libmpi`)");
    }
    return warnings;  // mpirun inside a SLURM job: Open MPI's view is the one that counts
  }

  const auto tasks = slurm_tasks(env);
  if (tasks && *tasks != mpi_world_size) {
    const std::string n = std::to_string(*tasks);
    if (env_get(env, "SLURM_PROCID")) {
      throw UserError("srun started " + n + " tasks (SLURM_NTASKS=" + n + ") but MPI sees a world of " + world +
                          (mpi_world_size == 1 ? " in each: every task is a singleton, 'rank 0 of 1', that would "
                                                 "train alone and write the same files"
                                               : ""),
                      kPmiHint);
    }
    throw UserError("this SLURM job has " + n + " tasks (SLURM_NTASKS=" + n +
                        ") but the trainer runs as a world of " + world +
                        " (rank 0 of 1): it was started without srun, or by srun without PMI",
                    "in the job script start it as `srun --mpi=pmix ./trainer ...`; for a single process "
                    "use `#SBATCH --ntasks-per-node=1`");
  }

  if (tasks && *tasks > 1 && !env_get(env, "SLURM_NTASKS_PER_NODE")) {
    warnings.push_back("the SLURM job sets --ntasks=" + std::to_string(*tasks) +
                       " without --ntasks-per-node: SLURM may put unequal numbers of tasks on the nodes, so "
                       "some GPUs get two ranks and others none (hint: use --nodes=N with "
                       "--ntasks-per-node=<GPUs per node> instead of --ntasks)");
  }
  return warnings;
}

void check_num_nodes(int configured_nodes, int world_nodes, const Env& env) {
  if (configured_nodes <= 0) return;  // 0: whatever the launcher gives
  const std::string want = std::to_string(configured_nodes);
  if (auto slurm_nodes = env_int(env, "SLURM_NNODES")) {
    if (*slurm_nodes != configured_nodes) {
      throw UserError("distributed.num_nodes=" + want + " but the SLURM job has " +
                          std::to_string(*slurm_nodes) + " node(s) (SLURM_NNODES=" +
                          std::to_string(*slurm_nodes) + ")",
                      "make them match: `#SBATCH --nodes=" + want +
                          "` in the job script, or distributed.num_nodes=0 to take the count from SLURM");
    }
  }
  if (world_nodes != configured_nodes) {
    throw UserError("distributed.num_nodes=" + want + " but the launched ranks span " +
                        std::to_string(world_nodes) + " node(s)",
                    "launch on " + want + " nodes (srun --nodes / mpirun --host), or set distributed.num_nodes=0 "
                    "to take the count from the launcher");
  }
}

void check_devices_vs_ntasks_per_node(const std::string& devices_text, int requested_per_node,
                                      const Env& env) {
  if (!env_get(env, "SLURM_JOB_ID")) return;
  const auto per_node = env_int(env, "SLURM_NTASKS_PER_NODE");
  if (!per_node || *per_node == requested_per_node) return;
  throw UserError("devices=\"" + devices_text + "\" asks for " + std::to_string(requested_per_node) +
                      " GPU(s) per node but the SLURM job has --ntasks-per-node=" + std::to_string(*per_node) +
                      " (one rank drives one GPU)",
                  "make them match: `#SBATCH --ntasks-per-node=" + std::to_string(requested_per_node) +
                      "` (and --gres=gpu:" + std::to_string(requested_per_node) + "), or devices=" +
                      std::to_string(*per_node));
}

}  // namespace trainer::runtime
