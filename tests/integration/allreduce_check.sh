# Communicator correctness on real ranks: sum/avg (float, double, empty, odd and
# large sizes), broadcast from every root, all-gather, asynchronous all-reduces in
# flight, barrier; for the mpi and gloo backends with 1, 2 and 3 ranks. Then the
# benchmark prints its table (small sizes only: a benchmark, not a timed test).
source "$(dirname "$0")/lib/common.sh"

for backend in mpi gloo; do
  for np in 1 2 3; do
    out=$(timeout 300 $MPIRUN -np $np "$TRAINER" bench allreduce --backend $backend --check --timeout 60) ||
      fail "communicator check failed: $backend with $np ranks"
    echo "$out"
    grep -q "communicator check ($backend, $np ranks): passed" <<<"$out" || fail "no verdict: $backend $np"
  done
done

# Self-spawned ranks (no mpirun) work the same.
out=$(timeout 300 "$TRAINER" bench allreduce --nprocs 3 --backend gloo --check --timeout 60) ||
  fail "communicator check failed: gloo with --nprocs 3"
grep -q "communicator check (gloo, 3 ranks): passed" <<<"$out" || fail "no verdict: --nprocs 3"

for backend in mpi gloo; do
  out=$(timeout 300 $MPIRUN -np 2 "$TRAINER" bench allreduce --backend $backend --min-bytes 4K \
          --max-bytes 64K --iters 5 --warmup 1) || fail "bench allreduce failed: $backend"
  echo "$out"
  grep -q "backend $backend, 2 ranks" <<<"$out" || fail "bench header missing ($backend)"
  rows=$(grep -cE '^ +[0-9]+K +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$' <<<"$out" || true)
  [[ $rows == 5 ]] || fail "expected 5 size rows (4K..64K), got $rows ($backend)"
done

# --check is documented (docs/DISTRIBUTED.md), so --help lists it.
"$TRAINER" bench allreduce --help | grep -q -- "--check .*verify the communicator's collectives" ||
  fail "bench allreduce --help does not list --check"
expect_fail 2 "not a size" "$TRAINER" bench allreduce --max-bytes lots
if ! "$TRAINER" --version | grep -qi nccl; then
  expect_fail 2 "nccl backend needs the CUDA build" "$TRAINER" bench allreduce --backend nccl
elif ! { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }; then
  expect_fail 2 "needs one GPU per rank on a node, but local rank 0 sees 0 GPU" "$TRAINER" bench allreduce --backend nccl
fi
expect_fail 2 "unknown communication backend" "$TRAINER" bench allreduce --backend tcp
echo "allreduce_check: ok"
