# Under SLURM too a stalled rank never hangs the job: the shipped job script
# (slurm/multi_gpu.sh, srun --mpi=pmix --kill-on-bad-exit=1) on the local one-node
# cluster, with rank 1 stopped (TRAINER_DEBUG_STOP) in MPI_Init and in the world's
# MPI_Comm_dup and a 5 s collective_timeout: the job ends within seconds, and its
# output names rank 1 as stopped.
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/slurm.sh"

start_local_slurm stall 16937 16938

"$TRAINER" synth --out "$SCRATCH/synthetic.h5" >/dev/null || fail "synth failed"
export TRAINER
for place in MPI_Init MPI_Comm_dup; do
  export TRAINER_DEBUG_STOP="1:$place"
  export TRAINER_ARGS="train --config $REPO/inputs/demo.cfg --backend gloo --accelerator cpu --data.synthetic_file $SCRATCH/synthetic.h5 --out $SCRATCH/run-$place --distributed.collective_timeout 5"
  start=$SECONDS
  rc=0
  timeout 300 sbatch --wait --chdir="$SCRATCH" --output="$SCRATCH/$place.out" "$REPO/slurm/multi_gpu.sh" \
    >"$SCRATCH/sbatch.txt" 2>&1 || rc=$?
  elapsed=$((SECONDS - start))
  grep -E "^(error|hint):" "$SCRATCH/$place.out" || true
  [[ $rc != 124 ]] || fail "$place: the SLURM job hung until the test's own timeout"
  [[ $rc != 0 ]] || fail "$place: the SLURM job with a stopped rank succeeded"
  grep -q "start-up: $place.* did not complete within 5 s" "$SCRATCH/$place.out" ||
    { cat "$SCRATCH/$place.out"; fail "$place: no watchdog report"; }
  grep -qE "rank 1 .*stopped \(SIGSTOP" "$SCRATCH/$place.out" ||
    { cat "$SCRATCH/$place.out"; fail "$place: the report does not name rank 1 as stopped"; }
  (( elapsed <= 60 )) || fail "$place: the job took ${elapsed}s with a 5 s timeout"
  echo "$place: the SLURM job ended with a failure after ${elapsed}s"
done
echo "stall_slurm: ok"
