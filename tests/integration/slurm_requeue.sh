# Preemption on the real local SLURM: slurm/multi_gpu.sh (as shipped: --signal=USR1@90,
# --requeue, --open-mode=append) trains on 2 ranks with --resume auto; at the 4th step
# the job gets `scancel --signal=USR1`, so every rank stops at a step boundary, rank 0
# writes last.h5 with the exact position and requeues the job (scontrol requeue). The
# requeued job continues from there, and its final weights and optimizer state equal
# those of an uninterrupted run, bit for bit (CPU, gloo).
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/slurm.sh"
start_local_slurm requeue 16947 16948
# The same compute threads under mpirun (which binds each rank to a core) and srun
# (SLURM_CPUS_PER_TASK): oneDNN's sums, and so the bits, depend on the thread count.
export OMP_NUM_THREADS=1

"$TRAINER" synth --out "$SCRATCH/small.h5" --frames 48 --size 64 --keypoints 4 --seed 1 >/dev/null || fail "synth"
cat >"$SCRATCH/small.cfg" <<CFG
[data]
data_files = $SCRATCH/small.h5
image_resize_height = 64
image_resize_width = 64
[training]
imgaug = dlc
train_batch_size = 4
val_batch_size = 8
max_epochs = 2
unfreezing_epoch = 1
log_every_n_steps = 1
check_val_every_n_epoch = 1
num_workers = 1
[model]
backbone = resnet18
[distributed]
backend = gloo
collective_timeout = 300
CFG
$MPIRUN -np 2 "$TRAINER" train --config "$SCRATCH/small.cfg" --out "$SCRATCH/full" >"$SCRATCH/full.log" 2>&1 ||
  { cat "$SCRATCH/full.log"; fail "uninterrupted run"; }

export TRAINER TRAINER_ARGS="train --config $SCRATCH/small.cfg --out $SCRATCH/job --resume auto"
job=$(sbatch --parsable --chdir="$SCRATCH" --output="$SCRATCH/job.out" "$REPO/slurm/multi_gpu.sh") ||
  fail "sbatch failed"
for i in $(seq 1200); do  # up to 120 s for the 4th step
  grep -q "step 4 " "$SCRATCH/job.out" 2>/dev/null && break
  sleep 0.1
done
grep -q "step 4 " "$SCRATCH/job.out" || { cat "$SCRATCH/job.out"; scancel "$job"; fail "the job never reached step 4"; }
scancel --signal=USR1 "$job" || fail "scancel --signal=USR1"
# The job requeues and runs again under the same id. SLURM holds a requeued job back
# for a while (its BeginTime); the test lets it start 3 s after the requeue, not at
# once: slurmd refuses a credential issued in the same second as the revocation of
# the first run's ("Killing non-startable batch JobId=1: Job credential revoked" in
# slurmctld.log, and the job ends FAILED with no second run), which is why SLURM
# holds it back. A final state counts once it has held for 30 s, or once the
# requeued run has started (its "resumed from" line).
released=0 final_for=0
for i in $(seq 600); do  # up to 300 s
  state=$(scontrol show job "$job" 2>/dev/null | grep -o "JobState=[A-Z_]*" | cut -d= -f2)
  restarts=$(scontrol show job "$job" 2>/dev/null | grep -o "Restarts=[0-9]*" | cut -d= -f2)
  if [[ $state == PENDING && ${restarts:-0} -ge 1 && $released == 0 ]]; then
    scontrol update JobId="$job" StartTime=now+3 && released=1
  fi
  if [[ $state == COMPLETED || $state == FAILED || $state == CANCELLED || $state == TIMEOUT ]] && [[ ${restarts:-0} -ge 1 ]]; then
    final_for=$((final_for + 1))
    { [[ $final_for -ge 60 ]] || grep -q "resumed from" "$SCRATCH/job.out"; } && break
  else
    final_for=0
  fi
  [[ -z $state ]] && break
  sleep 0.5
done
cat "$SCRATCH/job.out"
if [[ $state != COMPLETED ]]; then
  scontrol show job "$job" 2>&1 | grep -E "JobState|Reason|Restarts|BeginTime" >&2
  grep -v "debug" "$SLURM_LOCAL_DIR/log/slurmctld.log" 2>/dev/null | tail -15 >&2
  fail "job $job ended $state (restarts ${restarts:-0})"
fi
[[ ${restarts:-0} -ge 1 ]] || fail "job $job was not requeued"
grep -q "stopped by SIGUSR1 after step" "$SCRATCH/job.out" || fail "no stop by SIGUSR1 in the job's output"
grep -q "requeued SLURM job $job" "$SCRATCH/job.out" || fail "rank 0 did not requeue the job"
grep -q "resumed from $SCRATCH/job/checkpoints/last.h5" "$SCRATCH/job.out" || fail "the requeued job did not resume"
h5diff "$SCRATCH/full/checkpoints/last.h5" "$SCRATCH/job/checkpoints/last.h5" /model /model ||
  fail "weights after the requeue differ from the uninterrupted run"
h5diff "$SCRATCH/full/checkpoints/last.h5" "$SCRATCH/job/checkpoints/last.h5" /optimizer /optimizer ||
  fail "optimizer state after the requeue differs from the uninterrupted run"
echo "PASSED"
