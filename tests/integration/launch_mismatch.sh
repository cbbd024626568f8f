# Launcher cross-checks on a singleton with injected launcher environments: srun
# without PMI (N singletons, each "rank 0 of 1"), mpirun from another MPI, plus the
# accelerator/backend errors. Each must exit 2 with an error and a hint.
source "$(dirname "$0")/lib/common.sh"

# The job has 2 tasks but this process is a world of 1.
expect_fail 2 "SLURM_NTASKS=2" env SLURM_NTASKS=2 "$TRAINER" plan
grep -q "hint: .*srun --mpi=pmix" "$SCRATCH/err.txt" || fail "no srun --mpi=pmix hint"
# Inside an srun step that gave no PMI: caught before MPI_Init.
expect_fail 2 "without a PMI" env SLURM_NTASKS=2 SLURM_STEP_NUM_TASKS=2 SLURM_PROCID=0 SLURM_STEP_ID=0 \
  SLURM_JOB_ID=1 "$TRAINER" plan
grep -q "hint: .*srun --mpi=pmix" "$SCRATCH/err.txt" || fail "no srun --mpi=pmix hint (step)"
# An srun step with a PMI that still yields singletons (PMI of another MPI).
expect_fail 2 "rank 0 of 1" env SLURM_NTASKS=2 SLURM_STEP_NUM_TASKS=2 SLURM_PROCID=1 SLURM_STEP_ID=0 \
  SLURM_JOB_ID=1 PMI_RANK=1 "$TRAINER" plan
# Wrong mpirun.
expect_fail 2 "OMPI_COMM_WORLD_SIZE=4" env OMPI_COMM_WORLD_SIZE=4 "$TRAINER" plan
grep -q "hint: .*mpirun" "$SCRATCH/err.txt" || fail "no mpirun hint"
# num_nodes against SLURM_NNODES.
expect_fail 2 "SLURM_NNODES=1" env SLURM_NNODES=1 SLURM_JOB_ID=1 "$TRAINER" plan --distributed.num_nodes 2
# accelerator/backend resolution.
expect_fail 2 "accelerator=gpu" "$TRAINER" plan --accelerator gpu
expect_fail 2 "nccl needs GPUs" "$TRAINER" plan --backend nccl  # auto resolves to cpu here
grep -q "hint: .*gloo.*mpi" "$SCRATCH/err.txt" || fail "no gloo/mpi hint"
# Everything fine with a matching environment: a single task job.
env SLURM_NTASKS=1 SLURM_JOB_ID=1 SLURM_CPUS_PER_TASK=4 "$TRAINER" plan --json >"$SCRATCH/ok.json" ||
  fail "single-task SLURM environment rejected"
/usr/bin/python3 -c "import json,sys; p=json.load(open(sys.argv[1])); assert p['ranks'][0]['num_workers']==3, p" \
  "$SCRATCH/ok.json" || fail "workers from SLURM_CPUS_PER_TASK"
echo "PASS"
