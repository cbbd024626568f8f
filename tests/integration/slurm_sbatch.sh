# The SLURM job scripts on a real (one-node, local) SLURM: start munged, slurmctld and
# slurmd (scripts/slurm-local.sh), submit slurm/multi_gpu.sh unchanged (--gres=gpu:2
# is accepted: the node advertises two stand-in GPUs) with TRAINER_ARGS running the
# plan on CPU, wait for it, and check both ranks ran with the SLURM-derived plan.
# The daemons are stopped at the end, whatever happens.
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/slurm.sh"

bash -n "$REPO/slurm/multi_gpu.sh" || fail "slurm/multi_gpu.sh has a syntax error"
bash -n "$REPO/slurm/multi_node.sh" || fail "slurm/multi_node.sh has a syntax error"

start_local_slurm test 16917 16918

# The job script as shipped; only what it runs is overridden (sbatch exports our env).
# --cpus-per-task=8 from the script -> workers 7 per rank.
export TRAINER TRAINER_ARGS="plan --json"
timeout 300 sbatch --wait --chdir="$SCRATCH" --output="$SCRATCH/job.out" "$REPO/slurm/multi_gpu.sh" \
  >"$SCRATCH/sbatch.txt" 2>&1 || { cat "$SCRATCH/sbatch.txt" "$SCRATCH/job.out" >&2; fail "sbatch --wait failed"; }
cat "$SCRATCH/job.out"
sed -n '/^{/,/^}/p' "$SCRATCH/job.out" >"$SCRATCH/plan.json"
/usr/bin/python3 - "$SCRATCH/plan.json" <<'PY' || fail "plan from the SLURM job"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["launched_by"] == "srun", p["launched_by"]
assert p["world_size"] == 2 and p["num_nodes"] == 1, p
assert [r["rank"] for r in p["ranks"]] == [0, 1], p["ranks"]
assert [r["local_rank"] for r in p["ranks"]] == [0, 1], p["ranks"]
for r in p["ranks"]:
    assert r["num_workers"] == 7, r          # SLURM_CPUS_PER_TASK (8) - 1
    assert r["train_batch_size"] == 8, r     # 16 over 2 ranks
print("sbatch slurm/multi_gpu.sh: both ranks, SLURM-derived plan: ok")
PY

# A short CPU training run through the same script: srun's 2 ranks train together
# (gloo over the PMIx-launched world), rank 0 alone prints and writes.
export TRAINER_ARGS="train --config $REPO/inputs/demo.cfg --data.synthetic_file $SCRATCH/synthetic.h5 \
--backend gloo --max-steps 2 --training.num_workers 1 --distributed.collective_timeout 300 --out $SCRATCH/train"
timeout 600 sbatch --wait --chdir="$SCRATCH" --output="$SCRATCH/train.out" "$REPO/slurm/multi_gpu.sh" \
  >"$SCRATCH/sbatch_train.txt" 2>&1 || { cat "$SCRATCH/sbatch_train.txt" "$SCRATCH/train.out" >&2; fail "sbatch train failed"; }
grep -q "gradient all-reduce (gloo, 2 ranks" "$SCRATCH/train.out" || { cat "$SCRATCH/train.out"; fail "train under sbatch did not run 2 ranks"; }
grep -q "done: .* 2 steps" "$SCRATCH/train.out" || { cat "$SCRATCH/train.out"; fail "train under sbatch did not finish 2 steps"; }
[[ -f $SCRATCH/train/checkpoints/last.h5 ]] || { cat "$SCRATCH/train.out"; fail "train under sbatch wrote no checkpoint"; }
echo "sbatch slurm/multi_gpu.sh with train on CPU: ok"
export TRAINER_ARGS="plan --json"

# slurm/multi_node.sh needs 2 nodes; on this one-node cluster run its body with the
# node count and sizes overridden on the command line (they take precedence over #SBATCH).
timeout 300 sbatch --wait --nodes=1 --ntasks-per-node=2 --gres=gpu:2 --cpus-per-task=3 --chdir="$SCRATCH" \
  --output="$SCRATCH/job2.out" "$REPO/slurm/multi_node.sh" >"$SCRATCH/sbatch2.txt" 2>&1 ||
  { cat "$SCRATCH/sbatch2.txt" "$SCRATCH/job2.out" >&2; fail "sbatch --wait slurm/multi_node.sh failed"; }
sed -n '/^{/,/^}/p' "$SCRATCH/job2.out" >"$SCRATCH/plan2.json"
/usr/bin/python3 - "$SCRATCH/plan2.json" <<'PY' || { cat "$SCRATCH/job2.out" >&2; fail "plan from multi_node.sh"; }
import json, sys
p = json.load(open(sys.argv[1]))
assert p["launched_by"] == "srun" and p["world_size"] == 2, p
assert all(r["num_workers"] == 2 for r in p["ranks"]), p["ranks"]   # --cpus-per-task=3 - 1
print("sbatch slurm/multi_node.sh (1 node): ok")
PY

# srun without PMI: the trainer refuses instead of running 2 lone "rank 0 of 1"s.
rc=0
timeout 120 srun --mpi=none --nodes=1 --ntasks-per-node=2 "$TRAINER" plan >"$SCRATCH/nopmi.out" 2>&1 || rc=$?
[[ $rc == 2 ]] || { cat "$SCRATCH/nopmi.out" >&2; fail "srun --mpi=none: expected exit 2, got $rc"; }
grep -q "srun --mpi=pmix" "$SCRATCH/nopmi.out" || { cat "$SCRATCH/nopmi.out" >&2; fail "no srun --mpi=pmix hint"; }
echo "PASS"
