# No hang at any moment: a rank stopped (SIGSTOP, via TRAINER_DEBUG_STOP) in
# MPI_Init, in the world's MPI_Comm_dup, in the Gloo rendezvous or inside a
# collective every rank reached must end the job within collective_timeout + 5 s,
# naming rank 1 as stopped. A rank killed with -9 is named as gone. A failure on
# rank 0 alone (a bad --out) stops every rank with its cause and exit code 2.
# Afterwards no trainer process of this test is left.
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/stall.sh"
export OMPI_MCA_rmaps_base_oversubscribe=1
TIMEOUT=5

cfg="$SCRATCH/stall.cfg"
stall_config "$cfg" 1

# stalled_run NAME BACKEND PLACE PATTERN...: rank 1 stops at PLACE; the job must end
# in time, non-zero, and stderr must match every PATTERN.
stalled_run() {
  local name=$1 backend=$2 place=$3
  shift 3
  local start=$SECONDS rc=0
  TRAINER_DEBUG_STOP="1:$place" timeout 120 $MPIRUN -np 2 "$TRAINER" train --config "$cfg" \
    --out "$SCRATCH/run-$name" --distributed.backend "$backend" >"$SCRATCH/$name.out" 2>"$SCRATCH/$name.err" || rc=$?
  local elapsed=$((SECONDS - start))
  grep -E "^(error|hint):" "$SCRATCH/$name.err" || true
  [[ $rc != 0 ]] || fail "$name: a stopped rank did not fail the job"
  [[ $rc != 124 ]] || fail "$name: the job hung until the test's own timeout"
  for pattern in "$@"; do
    grep -qE -- "$pattern" "$SCRATCH/$name.err" || { cat "$SCRATCH/$name.err"; fail "$name: stderr lacks /$pattern/"; }
  done
  # collective_timeout + 5 s, plus start-up before the stop and mpirun's teardown.
  (( elapsed <= TIMEOUT + 5 + 15 )) || fail "$name: took ${elapsed}s with a ${TIMEOUT} s timeout"
  echo "$name: ended with exit $rc after ${elapsed}s"
  no_leftovers "$name"
}

stopped="rank 1 .*stopped \(SIGSTOP"
stalled_run mpi-init mpi "MPI_Init" "start-up: MPI_Init did not complete within $TIMEOUT s" \
  "rank 1 \(pid [0-9]+, this host\): the process is stopped"
stalled_run comm-dup mpi "MPI_Comm_dup" "start-up: MPI_Comm_dup of the world did not complete" "$stopped"
stalled_run gloo-rendezvous gloo "communicator set-up" "start-up: gloo communicator set-up did not complete" \
  "$stopped"
for backend in mpi gloo; do
  stalled_run "in-collective-$backend" $backend "collective #3" \
    "collective '.*' \(#3 on the $backend communicator\) at step 0 did not complete" \
    "every rank arrived at it, but some stopped running inside it" "$stopped"
done

# kill -9 of rank 1 during training (gloo): rank 0 names it as gone.
start=$SECONDS
TRAINER_DEBUG_STOP="1:collective #20" timeout 120 $MPIRUN -np 2 "$TRAINER" train --config "$cfg" \
  --distributed.collective_timeout 60 --out "$SCRATCH/run-kill" --distributed.backend gloo \
  >"$SCRATCH/kill.out" 2>"$SCRATCH/kill.err" &
launcher=$!
victim=""
for _ in $(seq 1 600); do  # rank 1 stops itself at collective #20; kill it there
  for pid in $(pgrep -f "$SCRATCH/run-kill" || true); do
    if grep -q "^T" <(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null); then victim=$pid; fi
  done
  [[ -n $victim ]] && break
  sleep 0.1
done
[[ -n $victim ]] || { kill -9 $launcher || true; fail "kill: rank 1 never reached collective #20"; }
kill -9 "$victim"
rc=0
wait $launcher || rc=$?
grep -E "^error:" "$SCRATCH/kill.err" || true
[[ $rc != 0 && $rc != 124 ]] || fail "kill: exit $rc after rank 1 was killed"
grep -qE "rank 1 \(host .*, pid $victim\).*the process is exited.*\(that rank is gone\)" "$SCRATCH/kill.err" ||
  { cat "$SCRATCH/kill.err"; fail "kill: rank 0 does not name rank 1 as gone"; }
echo "kill: ended with exit $rc after $((SECONDS - start))s"
no_leftovers kill

# --nprocs 2: the spawned copy stops in its MPI_Init (it is rank 0 of its own world
# until it joins, hence TRAINER_DEBUG_STOP=0:...), or is killed there. The parent used
# to say "every rank on this host is running" and name no rank (issue 26).
start=$SECONDS
rc=0
TRAINER_DEBUG_STOP="0:MPI_Init" timeout 120 "$TRAINER" train --config "$cfg" --out "$SCRATCH/run-spawn" --nprocs 2 \
  --distributed.backend gloo >"$SCRATCH/spawn.out" 2>"$SCRATCH/spawn.err" || rc=$?
[[ $rc != 0 && $rc != 124 ]] || { cat "$SCRATCH/spawn.err"; fail "spawn-stop: exit $rc"; }
grep -qE "rank 1 \(pid [0-9]+, spawned by --nprocs\): the process is stopped \(SIGSTOP" "$SCRATCH/spawn.err" ||
  { cat "$SCRATCH/spawn.err"; fail "spawn-stop: the stopped copy is not named"; }
! grep -q "every rank on this host is running" "$SCRATCH/spawn.err" || fail "spawn-stop: a false claim"
(( SECONDS - start <= TIMEOUT + 5 + 15 )) || fail "spawn-stop: took $((SECONDS - start))s"
no_leftovers spawn-stop
TRAINER_DEBUG_STOP="0:MPI_Init" timeout 120 "$TRAINER" train --config "$cfg" --out "$SCRATCH/run-spawnkill" \
  --nprocs 2 --distributed.backend gloo >"$SCRATCH/spawnkill.out" 2>"$SCRATCH/spawnkill.err" &
launcher=$!
victim=""
for _ in $(seq 1 300); do
  for pid in $(pgrep -f "$SCRATCH/run-spawnkill" || true); do
    if grep -q "^T" <(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null); then victim=$pid; fi
  done
  [[ -n $victim ]] && break
  sleep 0.1
done
[[ -n $victim ]] || { kill -9 $launcher || true; fail "spawn-kill: the copy never stopped in MPI_Init"; }
kill -9 "$victim"
rc=0
wait $launcher || rc=$?
[[ $rc != 0 && $rc != 124 ]] || fail "spawn-kill: exit $rc after the copy was killed"
grep -qE "rank\(s\) 1 \(spawned by --nprocs\): not running \(never started, or gone" "$SCRATCH/spawnkill.err" ||
  { cat "$SCRATCH/spawnkill.err"; fail "spawn-kill: the killed copy is not named"; }
no_leftovers spawn-kill

# A failure on rank 0 only: every rank prints the cause, exit 2, before training.
echo "not a folder" >"$SCRATCH/a-file"
mkdir -p "$SCRATCH/run-out" && echo "not a folder" >"$SCRATCH/run-out/checkpoints"
for out in "$SCRATCH/a-file/sub" "$SCRATCH/run-out"; do
  expect_fail 2 "." timeout 120 $MPIRUN -np 2 "$TRAINER" train --config "$cfg" --out "$out" --distributed.backend gloo
  n=$(grep -cE "^error: (cannot create folder|'.*' is not a folder)" "$SCRATCH/err.txt" || true)
  [[ $n == 2 ]] || { cat "$SCRATCH/err.txt"; fail "--out $out: expected the cause from both ranks, got $n"; }
  grep -q "(on rank 0)" "$SCRATCH/err.txt" || fail "--out $out: rank 1's error does not say it came from rank 0"
  ! grep -qi "connection closed\|connection reset" "$SCRATCH/err.txt" || fail "--out $out: a transport error leaked"
  ! grep -q "^epoch" "$SCRATCH/out.txt" || fail "--out $out: training started"
done
# --resume of a checkpoint of another model: every rank stops with the cause, exit 2.
expect_fail 2 "^error: checkpoint '.*' is a resnet18" timeout 120 $MPIRUN -np 2 "$TRAINER" train --config "$cfg" \
  --out "$SCRATCH/run-resume" --resume "$SCRATCH/warmup/checkpoints/last.h5" --model.backbone resnet34 \
  --distributed.backend gloo
n=$(grep -c "^error: checkpoint '.*' is a resnet18" "$SCRATCH/err.txt" || true)
[[ $n == 2 ]] || { cat "$SCRATCH/err.txt"; fail "--resume of another model: expected the cause from both ranks, got $n"; }
! grep -qi "connection closed\|connection reset" "$SCRATCH/err.txt" || fail "--resume of another model: a transport error leaked"
no_leftovers resume
echo "stall_startup: ok"
