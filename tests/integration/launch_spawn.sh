# `trainer plan --nprocs N` without a launcher: the singleton spawns N-1 copies of
# itself (MPI_Comm_spawn) and merges them into one world, itself rank 0. Three ranks
# on this (small) machine also checks that oversubscription is allowed by the trainer
# itself, not by the test environment.
source "$(dirname "$0")/lib/common.sh"
unset OMPI_MCA_rmaps_base_oversubscribe

for n in 2 3; do
  timeout 120 "$TRAINER" plan --nprocs $n --json >"$SCRATCH/spawn$n.json" 2>"$SCRATCH/err.txt" ||
    { cat "$SCRATCH/err.txt" >&2; fail "trainer plan --nprocs $n failed"; }
  /usr/bin/python3 - "$SCRATCH/spawn$n.json" $n <<'PY' || fail "spawn$n.json checks"
import json, math, sys
p, n = json.load(open(sys.argv[1])), int(sys.argv[2])
assert p["launched_by"] == "self-spawn", p["launched_by"]
assert p["world_size"] == n and p["data_parallel_ranks"] == n, p
assert [r["rank"] for r in p["ranks"]] == list(range(n)), p["ranks"]
assert sorted(r["local_rank"] for r in p["ranks"]) == list(range(n)), p["ranks"]
assert all(r["train_batch_size"] == math.ceil(16 / n) for r in p["ranks"]), p["ranks"]
print(f"--nprocs {n}: ok")
PY
done

# --nprocs under a launcher that started a different number of ranks is an error.
expect_fail 2 "drop it" $MPIRUN -np 2 "$TRAINER" plan --nprocs 3
echo "PASS"
