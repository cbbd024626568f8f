# Data-parallel training end to end on CPU, through every launch path:
#   mpirun -np 2 trainer train --backend gloo|mpi --config inputs/demo.cfg
#   trainer train --nprocs 2 --backend gloo          (self-spawn, no mpirun)
# then a 2-rank checkpoint resumed with 1 and with 3 ranks (checkpoints do not
# depend on the world size; the sampler re-partitions). Short runs (--max-steps).
source "$(dirname "$0")/lib/common.sh"
cd "$SCRATCH"
settings=(--config "$REPO/inputs/demo.cfg" --training.log_every_n_steps 2 --distributed.collective_timeout 300)
common=("${settings[@]}" --data.synthetic_file "$SCRATCH/synthetic.h5")

check_run() {  # check_run DIR STEPS LOG
  local dir=$1 steps=$2 log=$3
  [[ -f $dir/checkpoints/last.h5 ]] || { cat "$log"; fail "$dir: no checkpoints/last.h5"; }
  [[ -f $dir/metrics.csv ]] || { cat "$log"; fail "$dir: no metrics.csv"; }
  grep -q "done: .* $steps steps" "$log" || { cat "$log"; fail "$dir: did not finish $steps steps"; }
  # Only rank 0 prints: every progress line appears once.
  local lines
  lines=$(grep -c "^epoch .* step $steps (" "$log" || true)
  [[ $lines == 1 ]] || { cat "$log"; fail "$dir: progress line printed $lines times"; }
}

for backend in gloo mpi; do
  timeout 600 $MPIRUN -np 2 "$TRAINER" train "${common[@]}" --backend $backend --max-steps 6 \
    --out "$SCRATCH/mpirun_$backend" >"$SCRATCH/mpirun_$backend.log" 2>&1 ||
    { cat "$SCRATCH/mpirun_$backend.log"; fail "mpirun -np 2 train --backend $backend failed"; }
  check_run "$SCRATCH/mpirun_$backend" 6 "$SCRATCH/mpirun_$backend.log"
  grep -q "gradient all-reduce ($backend, 2 ranks" "$SCRATCH/mpirun_$backend.log" ||
    { cat "$SCRATCH/mpirun_$backend.log"; fail "no all-reduce report ($backend)"; }
  echo "mpirun -np 2 --backend $backend: ok"
done

# 1,000 frames: rank 0 then writes predictions.csv alone for a few seconds, while the
# spawned child is done. The child must not exit before the parent stops sending it
# heartbeats: that gave Open MPI TCP errors ("failed to TCP connect", "Broken pipe")
# and once a parent spinning in MPI_Test forever after its output was complete.
"$TRAINER" synth --out "$SCRATCH/spawn_frames.h5" --frames 1000 --size 64 >/dev/null || fail "synth"
timeout 600 "$TRAINER" train "${settings[@]}" --data.synthetic_file "$SCRATCH/spawn_frames.h5" --backend gloo \
  --nprocs 2 --max-steps 4 --out "$SCRATCH/spawn" >"$SCRATCH/spawn.log" 2>&1 ||
  { cat "$SCRATCH/spawn.log"; fail "train --nprocs 2 failed (124: it did not end)"; }
check_run "$SCRATCH/spawn" 4 "$SCRATCH/spawn.log"
grep -q "gradient all-reduce (gloo, 2 ranks" "$SCRATCH/spawn.log" || { cat "$SCRATCH/spawn.log"; fail "self-spawn ran 1 rank"; }
[[ -f $SCRATCH/spawn/predictions.csv ]] || { cat "$SCRATCH/spawn.log"; fail "self-spawn: no predictions.csv"; }
! grep -E "TCP connect|Broken pipe|ORTE_ERROR_LOG" "$SCRATCH/spawn.log" ||
  fail "self-spawn: Open MPI transport errors at shutdown (a rank left while another still sent to it)"
echo "--nprocs 2: ok"

# Resume the 2-rank run (step 6) with 1 rank and with 3 ranks, up to step 10.
for np in 3 1; do
  cp -r "$SCRATCH/mpirun_gloo" "$SCRATCH/resume_$np"
  launch=()
  [[ $np == 1 ]] || launch=($MPIRUN -np $np)
  timeout 600 "${launch[@]}" "$TRAINER" train "${common[@]}" --backend gloo --max-steps 10 \
    --resume "$SCRATCH/resume_$np/checkpoints/last.h5" >"$SCRATCH/resume_$np.log" 2>&1 ||
    { cat "$SCRATCH/resume_$np.log"; fail "resuming a 2-rank checkpoint with $np ranks failed"; }
  grep -q "resumed from .* step 6" "$SCRATCH/resume_$np.log" || { cat "$SCRATCH/resume_$np.log"; fail "did not resume at step 6"; }
  check_run "$SCRATCH/resume_$np" 10 "$SCRATCH/resume_$np.log"
  echo "resume with $np ranks: ok"
done
echo "ddp_launch: ok"
