# --nprocs 2 (the trainer spawns its second rank itself) with that rank stopped or
# killed in the middle of an epoch: rank 0 ends the job within collective_timeout
# + 5 s, names rank 1, and no process is left (issue 26: once, a kill -9 left rank 0
# running and a stop left the stopped copy behind). A killed rank is certain at once
# (/proc): the job ends within seconds of the kill with a 60 s timeout, naming it as
# gone (before, the MPI backend's pending collective waited out the whole timeout). Then Open MPI's daemon killed
# mid-epoch: one `error:` line and exit code 3, not Open MPI's silent exit 195.
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/stall.sh"
TIMEOUT=5
cfg="$SCRATCH/np.cfg"
stall_config "$cfg" 50 "log_every_n_steps = 2" "num_workers = 1"

# The spawned copy: the trainer process whose parent is Open MPI's daemon.
spawned_copy() {
  local pid
  for pid in $(pgrep -f "$SCRATCH/$1" || true); do
    local parent
    parent=$(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null) || continue
    if grep -q "orted" "/proc/$parent/cmdline" 2>/dev/null; then echo "$pid"; return; fi
  done
}

for how in STOP KILL; do
  name=run-$how
  timeout_s=$TIMEOUT limit=$((TIMEOUT + 5 + 3)) gone=""
  [[ $how == KILL ]] && timeout_s=60 limit=8 gone=".*\(that rank is gone\)"
  "$TRAINER" train --config "$cfg" --out "$SCRATCH/$name" --nprocs 2 --distributed.backend mpi \
    --distributed.collective_timeout $timeout_s >"$SCRATCH/$how.out" 2>"$SCRATCH/$how.err" &
  launcher=$!
  for _ in $(seq 1 600); do grep -qE "^epoch 0/[0-9]+ +step [0-9]+" "$SCRATCH/$how.out" 2>/dev/null && break; sleep 0.1; done
  grep -qE "^epoch 0/[0-9]+ +step [0-9]+" "$SCRATCH/$how.out" || { kill -9 $launcher || true; cat "$SCRATCH/$how.err"; fail "$how: training did not start"; }
  victim=$(spawned_copy "$name")
  [[ -n $victim ]] || { kill -9 $launcher || true; fail "$how: no spawned copy found"; }
  start=$SECONDS
  kill -$how "$victim"
  rc=0
  timeout 60 tail --pid=$launcher -f /dev/null || { kill -9 $launcher || true; fail "$how: rank 0 still running after 60 s"; }
  wait $launcher || rc=$?
  elapsed=$((SECONDS - start))
  grep -E "^(error|hint):" "$SCRATCH/$how.err" || true
  [[ $rc != 0 ]] || fail "$how: the job did not fail"
  grep -qE "rank 1 \(host [^,]+, pid $victim\): no heartbeat$gone" "$SCRATCH/$how.err" || { cat "$SCRATCH/$how.err"; fail "$how: rank 1 not named"; }
  (( elapsed <= limit )) || fail "$how: the job ended ${elapsed}s after the $how, with a ${timeout_s} s timeout"
  echo "$how of the spawned rank mid-epoch: the job ended after ${elapsed}s, exit $rc"
  no_leftovers "$how"
done

# Open MPI's daemon (the orted the --nprocs parent started) killed mid-epoch. Before,
# Open MPI's own PMIx handler ended rank 0 within 2 s with _exit(-61): exit code 195
# and nothing on stderr. Now: one `error:` line naming the lost daemon, exit code 3
# (kExitLauncherLost), the spawned copy killed, no temporary file left.
name=run-daemon
"$TRAINER" train --config "$cfg" --out "$SCRATCH/$name" --nprocs 2 --distributed.backend mpi \
  >"$SCRATCH/daemon.out" 2>"$SCRATCH/daemon.err" &
launcher=$!
for _ in $(seq 1 600); do grep -qE "^epoch 0/[0-9]+ +step [0-9]+" "$SCRATCH/daemon.out" 2>/dev/null && break; sleep 0.1; done
grep -qE "^epoch 0/[0-9]+ +step [0-9]+" "$SCRATCH/daemon.out" || { kill -9 $launcher || true; cat "$SCRATCH/daemon.err"; fail "daemon: training did not start"; }
daemon=$(pgrep -P $launcher -x orted || pgrep -P $launcher -x prted || true)
[[ -n $daemon ]] || { kill -9 $launcher || true; fail "daemon: no orted/prted child of the --nprocs parent"; }
start=$SECONDS
kill -9 "$daemon"
rc=0
timeout 60 tail --pid=$launcher -f /dev/null || { kill -9 $launcher || true; fail "daemon: rank 0 still running after 60 s"; }
wait $launcher || rc=$?
elapsed=$((SECONDS - start))
grep -E "^(error|hint):" "$SCRATCH/daemon.err" || true
[[ $rc == 3 ]] || { cat "$SCRATCH/daemon.err"; fail "daemon: exit code $rc, expected 3"; }
[[ $(grep -c '^error: ' "$SCRATCH/daemon.err") == 1 ]] || { cat "$SCRATCH/daemon.err"; fail "daemon: not exactly one error line"; }
grep -q "^error: \[rank 0\] lost the connection to the launcher's daemon on this host" "$SCRATCH/daemon.err" ||
  fail "daemon: the error does not say what happened"
grep -q "^hint: .*--resume auto" "$SCRATCH/daemon.err" || fail "daemon: no hint"
(( elapsed <= 5 )) || fail "daemon: rank 0 ended ${elapsed}s after the daemon was killed"
echo "orted killed mid-epoch: rank 0 ended after ${elapsed}s, exit $rc"
no_leftovers daemon
! find "$SCRATCH/$name" -name '*.tmp-*' | grep -q . || fail "daemon: temporary files left: $(find "$SCRATCH/$name" -name '*.tmp-*')"
echo "stall_nprocs: ok"
