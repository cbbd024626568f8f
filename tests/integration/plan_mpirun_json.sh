# `mpirun -np 2 trainer plan --json`: both ranks in the JSON, batch divided by 2,
# compute threads that share the node's CPUs, effective-batch warning for an odd
# batch, lr scaling.
source "$(dirname "$0")/lib/common.sh"

$MPIRUN -np 2 "$TRAINER" plan --json >"$SCRATCH/plan.json" 2>"$SCRATCH/err.txt" ||
  { cat "$SCRATCH/err.txt" >&2; fail "mpirun -np 2 trainer plan --json failed"; }
/usr/bin/python3 - "$SCRATCH/plan.json" <<'PY' || fail "plan.json checks"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["hypothetical"] is False, p
assert p["launched_by"] == "mpirun", p["launched_by"]
assert p["world_size"] == 2 and p["num_nodes"] == 1, p
assert p["accelerator"] == "cpu" and p["backend"] == "gloo", p
assert p["data_parallel_ranks"] == 2
assert p["train_batch_size"] == 16 and p["effective_train_batch"] == 16
ranks = p["ranks"]
assert [r["rank"] for r in ranks] == [0, 1], ranks
assert [r["local_rank"] for r in ranks] == [0, 1], ranks
for r in ranks:
    assert r["device"] == -1 and r["local_size"] == 2 and r["node"] == 0, r
    assert r["train_batch_size"] == 8 and r["val_batch_size"] == 16 and r["test_batch_size"] == 32, r
    assert r["context_batch_size"] is None, r
    assert r["num_workers"] >= 0, r
# Compute threads: the node's CPUs shared by its ranks, never each rank all of them.
import os
cpus = len(os.sched_getaffinity(0))
assert all(r["compute_threads"] >= 1 and r["compute_threads_source"] for r in ranks), ranks
assert sum(r["compute_threads"] for r in ranks) <= max(cpus, 2), (cpus, ranks)
print("plan --json under mpirun: ok")
PY

# OMP_NUM_THREADS, passed to the ranks, wins.
$MPIRUN -np 2 -x OMP_NUM_THREADS=3 "$TRAINER" plan --json >"$SCRATCH/omp.json" 2>"$SCRATCH/err.txt" ||
  { cat "$SCRATCH/err.txt" >&2; fail "plan with OMP_NUM_THREADS failed"; }
/usr/bin/python3 -c '
import json, sys
ranks = json.load(open(sys.argv[1]))["ranks"]
assert all(r["compute_threads"] == 3 and r["compute_threads_source"] == "OMP_NUM_THREADS" for r in ranks), ranks
' "$SCRATCH/omp.json" || fail "OMP_NUM_THREADS is not the ranks' compute threads"

# Odd global batch: 15 over 2 ranks -> 8 each, effective 16, one warning; sqrt lr scaling.
$MPIRUN -np 2 "$TRAINER" plan --json --training.train_batch_size 15 --training.lr_scaling sqrt \
  --training.reference_batch_size 4 --training.learning_rate 0.001 >"$SCRATCH/odd.json" 2>"$SCRATCH/err.txt" ||
  { cat "$SCRATCH/err.txt" >&2; fail "plan with odd batch failed"; }
/usr/bin/python3 - "$SCRATCH/odd.json" <<'PY' || fail "odd.json checks"
import json, math, sys
p = json.load(open(sys.argv[1]))
assert all(r["train_batch_size"] == 8 for r in p["ranks"]), p["ranks"]
assert p["effective_train_batch"] == 16, p
assert any("effective global batch is 16" in w for w in p["warnings"]), p["warnings"]
assert abs(p["learning_rate"] - 0.001 * math.sqrt(16 / 4)) < 1e-12, p["learning_rate"]
print("odd batch and lr scaling: ok")
PY

# The text form prints one row per rank, in rank order.
$MPIRUN -np 2 "$TRAINER" plan >"$SCRATCH/plan.txt" 2>&1 || { cat "$SCRATCH/plan.txt" >&2; fail "text plan"; }
grep -qE '^ +0 +0 +0 +cpu +8 +16 +32' "$SCRATCH/plan.txt" || { cat "$SCRATCH/plan.txt"; fail "rank 0 row"; }
grep -qE '^ +1 +0 +1 +cpu +8 +16 +32' "$SCRATCH/plan.txt" || { cat "$SCRATCH/plan.txt"; fail "rank 1 row"; }
echo "PASS"
