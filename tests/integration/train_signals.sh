# Stop signals on 2 ranks under mpirun: SIGUSR1, SIGTERM or SIGINT sent to ONE rank
# stops both at the same step boundary with a checkpoint of the exact position
# (mid-epoch), exit 0 / 143 / 130; `--resume auto` then finishes the run, and its final
# weights and optimizer state equal an uninterrupted run's, bit for bit (CPU). SIGUSR1
# (SLURM's warning) during the set-up stops the run at its first step the same way.
source "$(dirname "$0")/lib/common.sh"
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
max_epochs = 3
unfreezing_epoch = 1
log_every_n_steps = 1
check_val_every_n_epoch = 1
num_workers = 1
[model]
backbone = resnet18
CFG
$MPIRUN -np 2 "$TRAINER" train --config "$SCRATCH/small.cfg" --out "$SCRATCH/full" >"$SCRATCH/full.log" 2>&1 ||
  { cat "$SCRATCH/full.log"; fail "uninterrupted run"; }

# interrupt SIGNAL CODE NAME [STEP]: starts a run, signals one rank at its STEP-th step (4), checks
# the stop, resumes with --resume auto and compares the final state with the full run.
interrupt() {
  local sig=$1 code=$2 name=$3 out=$SCRATCH/$3 step=${4:-4}
  $MPIRUN -np 2 "$TRAINER" train --config "$SCRATCH/small.cfg" --out "$out" --resume auto >"$out.log" 2>&1 &
  local launcher=$! rank="" i
  for i in $(seq 600); do  # up to 60 s for that step
    grep -q "step $step " "$out.log" 2>/dev/null && break
    sleep 0.1
  done
  grep -q "step $step " "$out.log" || { kill $launcher; cat "$out.log"; fail "$name: no step $step"; }
  rank=$(pgrep -P $launcher -f "trainer train" | tail -n 1)
  [[ -n $rank ]] || fail "$name: no rank process under mpirun"
  kill -s "$sig" "$rank"
  check_stop_and_resume "$sig" "$code" "$name" "$launcher" "after step"
}

# SLURM's warning during the set-up: one rank is frozen (SIGSTOP) as soon as its
# SIGUSR1 handler is installed, at the start of `train`, before any collective, so no
# step can have run; the signal waits for SIGCONT. The run must record it, stop at
# its first step with a checkpoint, exit 0, and resume to the uninterrupted state.
usr1_in_setup() {
  local name=usr1_setup out=$SCRATCH/usr1_setup
  $MPIRUN -np 2 "$TRAINER" train --config "$SCRATCH/small.cfg" --out "$out" --resume auto >"$out.log" 2>&1 &
  local launcher=$! rank="" pid caught i
  for i in $(seq 3000); do  # up to about 30 s
    for pid in $(pgrep -P $launcher -f "trainer train"); do
      caught=$(awk '/^SigCgt:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
      [[ -n $caught ]] && (((16#$caught >> 9) & 1)) && { rank=$pid; break 2; }  # bit 9: signal 10, SIGUSR1
    done
    sleep 0.01
  done
  [[ -n $rank ]] || { kill $launcher; cat "$out.log"; fail "$name: no rank caught SIGUSR1"; }
  kill -STOP "$rank"
  kill -USR1 "$rank"
  kill -CONT "$rank"
  check_stop_and_resume USR1 0 "$name" "$launcher" "after step 1;"
}

# check_stop_and_resume SIGNAL CODE NAME LAUNCHER STOP_TEXT: the signalled run's exit,
# message and mid-epoch checkpoint; then --resume auto and the comparison.
check_stop_and_resume() {
  local sig=$1 code=$2 name=$3 launcher=$4 stop_text=$5 out=$SCRATCH/$3
  local rc=0
  wait $launcher || rc=$?
  [[ $rc == "$code" ]] || { cat "$out.log"; fail "$name: exit $rc, expected $code"; }
  grep -q "stopped by SIG$sig $stop_text" "$out.log" || { cat "$out.log"; fail "$name: no stop message ($stop_text)"; }
  local into
  into=$(h5dump -a /state/batches_into_epoch "$out/checkpoints/last.h5" | awk '/\(0\)/ {print $2}')
  [[ -n $into && $into -gt 0 ]] || fail "$name: last.h5 is not a mid-epoch checkpoint (batches_into_epoch '$into')"
  echo "$name: stopped with exit $rc, $into batches into the epoch"
  # The progress file (written after each epoch by a thread of its own) is on disk
  # before the process exits, and says the run is unfinished at its last full epoch.
  local done_epochs
  done_epochs=$(h5dump -a /state/epochs_completed "$out/checkpoints/last.h5" | awk '/\(0\)/ {print $2}')
  grep -qE "^\{\"status\": \"TRAINING\", \"progress\": \{\"completed\": $done_epochs, \"total\": 3," "$out/train_status.json" ||
    { cat "$out/train_status.json"; fail "$name: train_status.json after the stop (expected $done_epochs of 3 epochs)"; }
  echo "$name: train_status.json says $done_epochs of 3 epochs"
  $MPIRUN -np 2 "$TRAINER" train --config "$SCRATCH/small.cfg" --out "$out" --resume auto >"$out.resume.log" 2>&1 ||
    { cat "$out.resume.log"; fail "$name: --resume auto"; }
  grep -q "resumed from $out/checkpoints/last.h5" "$out.resume.log" || { cat "$out.resume.log"; fail "$name: did not resume"; }
  h5diff "$SCRATCH/full/checkpoints/last.h5" "$out/checkpoints/last.h5" /model /model ||
    fail "$name: weights differ from the uninterrupted run"
  h5diff "$SCRATCH/full/checkpoints/last.h5" "$out/checkpoints/last.h5" /optimizer /optimizer ||
    fail "$name: optimizer state differs from the uninterrupted run"
  # metrics.csv: the same epoch and step rows as the uninterrupted run (timings aside;
  # the interrupted epoch's mean loss is summed in two parts, so it may differ in the
  # last float digit).
  diff <(cut -d, -f1,2,4-7,10 "$SCRATCH/full/metrics.csv") <(cut -d, -f1,2,4-7,10 "$out/metrics.csv") ||
    fail "$name: metrics.csv differs"
  paste -d, <(cut -d, -f3 "$SCRATCH/full/metrics.csv") <(cut -d, -f3 "$out/metrics.csv") | awk -F, '
    NR > 1 && $1 != "" { d = $1 - $2; if (d < 0) d = -d; if (d > 1e-6 * $1) { print "train_loss " $1 " vs " $2; bad = 1 } }
    END { exit bad }' || fail "$name: an epoch's mean loss differs"
}
interrupt USR1 0 usr1 14  # in the second epoch: its progress file update came from the writer thread
interrupt TERM 143 term
interrupt INT 130 int
usr1_in_setup

# --resume auto without --out is a usage error.
expect_fail 2 "--resume auto needs --out" "$TRAINER" train --config "$SCRATCH/small.cfg" --resume auto
echo "PASSED"
