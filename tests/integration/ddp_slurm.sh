# `sbatch slurm/multi_gpu.sh` trains: the shipped job script, run unchanged on the
# local one-node SLURM cluster (scripts/slurm-local.sh) with the CPU backend (gloo),
# 2 ranks started by srun: it must train, checkpoint, and report the 2-rank
# all-reduce. (tests/integration/slurm_sbatch.sh checks the plan of both ranks.)
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/slurm.sh"

start_local_slurm ddp 16927 16928

export TRAINER TRAINER_ARGS="train --config $REPO/inputs/demo.cfg --backend gloo --accelerator cpu --max-steps 4 --training.log_every_n_steps 2 --data.synthetic_file $SCRATCH/synthetic.h5 --out $SCRATCH/run"
timeout 600 sbatch --wait --chdir="$SCRATCH" --output="$SCRATCH/job.out" "$REPO/slurm/multi_gpu.sh" \
  >"$SCRATCH/sbatch.txt" 2>&1 || { cat "$SCRATCH/sbatch.txt" "$SCRATCH/job.out" >&2; fail "sbatch --wait failed"; }
cat "$SCRATCH/job.out"
[[ -f $SCRATCH/run/checkpoints/last.h5 ]] || fail "the SLURM job wrote no checkpoint"
grep -q "gradient all-reduce (gloo, 2 ranks" "$SCRATCH/job.out" || fail "the SLURM job did not train with 2 ranks"
grep -q "done: .* 4 steps" "$SCRATCH/job.out" || fail "the SLURM job did not finish 4 steps"
echo "ddp_slurm: ok"
