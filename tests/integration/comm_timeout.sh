# A hang is never silent: rank 1 never joins its 5th collective
# (TRAINER_DEBUG_SKIP_COLLECTIVE=1:5) with a 2 s collective timeout; the job must
# exit non-zero within seconds, naming the collective and rank 1 as missing.
source "$(dirname "$0")/lib/common.sh"

for backend in mpi gloo; do
  start=$(date +%s)
  rc=0
  TRAINER_DEBUG_SKIP_COLLECTIVE=1:5 timeout 120 $MPIRUN -np 3 "$TRAINER" bench allreduce \
    --backend $backend --check --timeout 2 >"$SCRATCH/out.txt" 2>"$SCRATCH/err.txt" || rc=$?
  elapsed=$(( $(date +%s) - start ))
  cat "$SCRATCH/err.txt"
  [[ $rc != 0 ]] || fail "$backend: a skipped collective did not fail the job"
  [[ $rc != 124 ]] || fail "$backend: the job hung until the test's own timeout"
  grep -q "ranks that did not arrive: 1$" "$SCRATCH/err.txt" || fail "$backend: report does not name rank 1"
  grep -q "collective 'check all_reduce float' (#5 on the $backend communicator) at step 0" "$SCRATCH/err.txt" ||
    fail "$backend: report does not name the collective"
  grep -q "rank 1 (host .*): last arrived at collective #4" "$SCRATCH/err.txt" ||
    fail "$backend: report lacks rank 1's last collective"
  echo "$backend: aborted with exit $rc after ${elapsed}s"
  (( elapsed < 60 )) || fail "$backend: took ${elapsed}s to abort with a 2 s timeout"
done
echo "comm_timeout: ok"
