#!/bin/bash
# Train on 2 nodes with 4 GPUs each (8 ranks), started by srun.
#
#   TRAINER_ARGS="plan" sbatch slurm/multi_node.sh   # check the plan first
#   sbatch slurm/multi_node.sh
#   # or, without submitting: ./build/trainer plan --nodes 2 --gpus-per-node 4 --cpus-per-task 8 --config ...
#
# What to change:
#   --nodes: the number of nodes. If the config sets distributed.num_nodes, it must match
#       (0, the default, takes it from SLURM).
#   --gres=gpu:N and --ntasks-per-node=N together: one rank per GPU on every node.
#   --cpus-per-task: CPU cores per rank; loader workers per rank = cpus-per-task - 1 (max 8);
#       on CPU nodes also each rank's compute threads (OMP_NUM_THREADS wins).
#   --partition / --account / --time / --mem, and the `module load` line: your site's.
#   The NCCL_* lines below only if your network needs them.
#   TRAINER_ARGS: what the trainer runs (default: train with inputs/demo.cfg).
# What is automatic:
#   Global rank, node and node-local rank come from MPI (MPI_Comm_split_type), each rank
#   takes GPU number local_rank; the global batch is divided by all 8 GPUs; NCCL is set up
#   by broadcasting its id over MPI; only rank 0 writes logs and checkpoints.
# Do not use --ntasks (uneven placement over nodes); use --nodes with --ntasks-per-node.
#
#SBATCH --job-name=trainer-2x4gpu
#SBATCH --nodes=2
#SBATCH --gres=gpu:4
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=8
#SBATCH --time=24:00:00
#SBATCH --output=%x-%j.out
#SBATCH --open-mode=append
#SBATCH --signal=USR1@90
#SBATCH --requeue

set -euo pipefail

# module load openmpi cuda   # site-specific; the modules the trainer was built with

# export NCCL_SOCKET_IFNAME=ib0   # the interface between nodes, if NCCL picks a wrong one
# export NCCL_DEBUG=WARN          # INFO to see the rings/trees NCCL builds

TRAINER=${TRAINER:-./build/trainer}
# Near the time limit SLURM sends SIGUSR1: the ranks checkpoint the exact position and
# the job requeues itself; the requeued job continues from outputs/slurm-<job id>
# (see slurm/multi_gpu.sh).
TRAINER_ARGS=${TRAINER_ARGS:-train --config inputs/demo.cfg --out outputs/slurm-$SLURM_JOB_ID --resume auto}

echo "job $SLURM_JOB_ID on $SLURM_JOB_NODELIST: $SLURM_NNODES nodes, $SLURM_NTASKS_PER_NODE tasks/node"

# --mpi=pmix: without a PMI every task would be a lone "rank 0 of 1" (the trainer refuses).
# --cpus-per-task: since Slurm 22.05 srun no longer inherits it from sbatch; pass it on.
# --kill-on-bad-exit=1: a rank that fails (or whose watchdog ends a stalled start-up before
#   MPI is up) ends the whole step, instead of leaving the other tasks waiting.
# shellcheck disable=SC2086
srun --mpi=pmix --kill-on-bad-exit=1 --cpus-per-task="$SLURM_CPUS_PER_TASK" "$TRAINER" $TRAINER_ARGS
