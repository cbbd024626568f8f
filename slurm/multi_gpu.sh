#!/bin/bash
# Train on one node with 2 GPUs: one rank per GPU, started by srun.
#
#   sbatch slurm/multi_gpu.sh                      # from the repository root
#   TRAINER_ARGS="plan" sbatch slurm/multi_gpu.sh  # check the plan first (a few seconds)
#
# What to change:
#   --gres=gpu:N and --ntasks-per-node=N together: one task (rank) per GPU. The trainer
#       checks that they match `devices` (unset = all GPUs the task can see) and stops
#       with a hint when they do not.
#   --cpus-per-task: CPU cores per rank. Loader workers per rank = cpus-per-task - 1
#       (at most 8) unless training.num_workers is set in the config; on CPU nodes
#       (--accelerator cpu) also each rank's compute threads (OMP_NUM_THREADS wins).
#   --partition / --account / --time / --mem: your site's values.
#   The `module load` line, if your site uses environment modules.
#   TRAINER_ARGS: what the trainer runs (default: train with inputs/demo.cfg into
#       outputs/slurm-<job id>, continuing from its last checkpoint when the job was requeued).
# Time limits and preemption (as Lightning's SLURM plugin): 90 s before the time limit
#   SLURM sends SIGUSR1 (--signal); every rank finishes its step, they agree, rank 0
#   writes checkpoints/last.h5 with the exact position and requeues the job (--requeue;
#   distributed.slurm_auto_requeue). The requeued job runs this script again with the
#   same job id, so `--resume auto --out outputs/slurm-$SLURM_JOB_ID` continues the run.
#   `scancel --signal=USR1 <job>` does the same by hand; SIGTERM and Ctrl-C stop with a
#   checkpoint too (exit 143 and 130), without requeueing.
# What is automatic:
#   Ranks, node-local ranks and the GPU of each rank come from MPI and CUDA_VISIBLE_DEVICES
#   (set by SLURM for --gres); the global batch sizes in the config are divided by the
#   number of GPUs (see `trainer plan`); NCCL is used on GPUs (distributed.backend=auto).
# Do not use --ntasks: with several nodes SLURM may spread the tasks unevenly.
#
#SBATCH --job-name=trainer-2gpu
#SBATCH --nodes=1
#SBATCH --gres=gpu:2
#SBATCH --ntasks-per-node=2
#SBATCH --cpus-per-task=8
#SBATCH --time=12:00:00
#SBATCH --output=%x-%j.out
#SBATCH --open-mode=append
#SBATCH --signal=USR1@90
#SBATCH --requeue

set -euo pipefail

# module load openmpi cuda   # site-specific; the modules the trainer was built with

TRAINER=${TRAINER:-./build/trainer}
TRAINER_ARGS=${TRAINER_ARGS:-train --config inputs/demo.cfg --out outputs/slurm-$SLURM_JOB_ID --resume auto}

echo "job $SLURM_JOB_ID (restart ${SLURM_RESTART_COUNT:-0}) on $SLURM_JOB_NODELIST: $SLURM_NTASKS_PER_NODE tasks/node, $SLURM_CPUS_PER_TASK cpus/task"

# --mpi=pmix: srun must give MPI a PMI, or every task is a lone "rank 0 of 1" (the trainer
#   refuses that with an error). `srun --mpi=list` shows what your SLURM offers.
# --cpus-per-task: since Slurm 22.05 srun no longer inherits it from sbatch; pass it on.
# TRAINER_ARGS is split on spaces on purpose (it holds several arguments).
# --kill-on-bad-exit=1: a rank that fails (or whose watchdog ends a stalled start-up before
#   MPI is up) ends the whole step, instead of leaving the other tasks waiting.
# shellcheck disable=SC2086
srun --mpi=pmix --kill-on-bad-exit=1 --cpus-per-task="$SLURM_CPUS_PER_TASK" "$TRAINER" $TRAINER_ARGS
