# The core correctness property of data-parallel training: with synchronized
# batch norm and augmentation keyed by frame index (dlc), R ranks at global batch
# B compute the gradients one rank computes at batch B, up to floating-point
# reassociation. Measured per tensor, on one step taken from a trained checkpoint:
#   max over tensors of ||g_R - g_1|| / ||g_1|| < 1e-5
# for R = 2 and 4, with the mpi and the gloo communicators, on a training split
# that is a multiple of the global batch and on one that is not.
#
# Why this shape (docs/DISTRIBUTED.md, "Equivalence"):
# - Gradients, not weights after many steps: Adam divides each gradient by its own
#   magnitude, so weights drift apart through near-zero components that say
#   nothing about the gradients being right.
# - Per tensor, not one norm over everything: large tensors would dilute an error
#   in a small one (a BN layer's bias, say).
# - From a trained checkpoint (20 steps, lr 1e-3), not from initialization: with
#   the head's 0.01-gain init the backbone's first gradients are ~1e-8 and made of
#   cancellation, where even float64 and float32 PyTorch differ by 2e-3.
# - Exempt: the last layer's bias. The spatial softmax ignores a constant shift of
#   a heatmap, so its true gradient is zero and what is left is rounding noise.
# - Split B (24 training frames, global batch 16): each epoch is one full batch
#   and the 8-frame remainder. One rank trains the epoch's full batch (step 21) and
#   stops there, a checkpoint in the middle of the epoch; every R resumes from it at
#   the remainder batch (step 22), so all start from the same weights. (Until
#   2026-11-27 every R trained step 21 itself, and its reassociation noise, ~1e-7,
#   reached step 22: when Adam's second moments moved by 1.3e-5 that day, the
#   trajectory met a ReLU tie there and 2 ranks differed from 1 by 3e-2.) 24 divides
#   by 1, 2 and 4 ranks, so no rank gets padding rows (with padding the global batch
#   differs from one rank's). (A 20-frame split hits a ReLU tie in this data:
#   docs/DISTRIBUTED.md.)
# - The frames: synth seed 7, and seed 8 as a second opinion (docs/DISTRIBUTED.md,
#   "Ties, and a second data set"): float32 reassociation moves a pre-activation
#   that sits within an ulp of a ReLU or max-pool kink to the other side, and one
#   tensor then differs by ~1e-3 while the median stays at rounding. Seeds 5 and 6
#   met such kinks (a CPU with AVX2 only; the dlc geometry of 2026-11-29), and so
#   did seed 7 at 4 ranks once the image-space steps took the stored frame's sizes
#   the same day. So a comparison that fails on seed 7 is run again on seed 8's
#   own trajectory, and the test fails when both fail: a real error (the bucket
#   one element short below) is in the arithmetic, not the data, and fails both.
source "$(dirname "$0")/lib/common.sh"
PY=/usr/bin/python3
$PY -c "import h5py, numpy" 2>/dev/null || skip "needs /usr/bin/python3 with h5py and numpy"

config() {  # config FILE TRAIN_PROB FRAMES: 40 frames -> 40 * TRAIN_PROB training frames, the rest validation
  cat >"$1" <<CFG
[data]
data_files = $3
image_resize_height = 64
image_resize_width = 64
downsample_factor = 2
[training]
imgaug = dlc
train_batch_size = 16
val_batch_size = 16
max_epochs = 1000
train_prob = $2
val_prob = $(awk "BEGIN { print 1 - $2 }")
learning_rate = 1e-3
unfreezing_epoch = 0
check_val_every_n_epoch = 1000
log_every_n_steps = 1
[model]
backbone = resnet18
[distributed]
sync_batchnorm = true
collective_timeout = 300
CFG
}

train() {  # train LOG NP ARGS...: one rank without mpirun, else mpirun -np NP
  local log=$1 np=$2; shift 2
  local launch=()
  [[ $np == 1 ]] || launch=($MPIRUN -np "$np")
  local rc=0
  timeout 600 "${launch[@]}" "$TRAINER" train "$@" >"$log" 2>&1 || rc=$?
  [[ $rc == 0 ]] || { cat "$log"; fail "$log: exit $rc"; }
}

declare -A start
prepare() {  # prepare SEED: frames, configs and both splits' starting checkpoints in $SCRATCH/seedSEED
  local d=$SCRATCH/seed$1
  mkdir -p "$d"
  "$TRAINER" synth --out "$d/frames.h5" --frames 40 --size 64 --seed "$1" >/dev/null || fail "synth failed"
  config "$d/multiple.cfg" 0.8 "$d/frames.h5"  # 32 training frames: two full batches per epoch
  config "$d/remainder.cfg" 0.6 "$d/frames.h5" # 24 training frames: 16 + 8
  # The shared starting point: 20 steps (10 epochs of the 32-frame split) on one rank.
  train "$d/base.log" 1 --config "$d/multiple.cfg" --out "$d/base" --max-steps 20
  [[ -f $d/base/checkpoints/last.h5 ]] || { cat "$d/base.log"; fail "no base checkpoint"; }
  # Split B's start: step 21 on one rank, stopped in the middle of the epoch.
  train "$d/base_remainder.log" 1 --config "$d/remainder.cfg" --out "$d/base_remainder" \
    --resume "$d/base/checkpoints/last.h5" --max-steps 21
  grep -q "step 21 (1/2)" "$d/base_remainder.log" || { cat "$d/base_remainder.log"; fail "step 21 is not batch 1/2"; }
  start[$1/multiple]=$d/base/checkpoints/last.h5
  start[$1/remainder]=$d/base_remainder/checkpoints/last.h5
}
prepare 7
checkpoint=${start[7/multiple]}

# Bad --dump-gradients requests are one error line and exit code 2.
expect_fail 2 "^error: --dump-gradients-step needs --dump-gradients" \
  "$TRAINER" train --config "$SCRATCH/seed7/multiple.cfg" --out "$SCRATCH/bad" --dump-gradients-step 3
expect_fail 2 "^error: cannot dump the gradients of step 5: the run resumes after step 20" \
  "$TRAINER" train --config "$SCRATCH/seed7/multiple.cfg" --out "$SCRATCH/bad" --resume "$checkpoint" \
  --dump-gradients "$SCRATCH/bad.h5" --dump-gradients-step 5
[[ ! -e $SCRATCH/bad.h5 ]] || fail "a refused dump wrote a file"

dump() {  # dump SEED SPLIT STEP NP BACKEND BATCH: resume, run to STEP (BATCH of its epoch), write its gradients
  local d=$SCRATCH/seed$1 split=$2 step=$3 np=$4 backend=$5 name="$2_r$4_$5"
  [[ -f $d/$name.h5 ]] && return 0  # seed 8's one-rank dump serves every retry
  train "$d/$name.log" "$np" --config "$d/$split.cfg" --out "$d/$name" --resume "${start[$1/$split]}" \
    --max-steps "$step" --dump-gradients "$d/$name.h5" --dump-gradients-step "$step" --distributed.backend "$backend"
  [[ -f $d/$name.h5 ]] || { cat "$d/$name.log"; fail "$name wrote no gradients"; }
  # The dumped step is the batch we mean: the first of epoch 10, or its remainder.
  grep -q "step $step ($6/2)" "$d/$name.log" || { cat "$d/$name.log"; fail "$name: step $step is not batch $6/2"; }
}

compare() {  # compare SEED ONE MANY: per-tensor relative L2 difference of the dumped gradients
  $PY - "$SCRATCH/seed$1/$2.h5" "$SCRATCH/seed$1/$3.h5" <<'PYEOF'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
ga, gb = a["gradients"], b["gradients"]
assert ga.attrs["global_step"] == gb.attrs["global_step"], "different steps"
assert ga.attrs["world_size"] == 1 and gb.attrs["world_size"] > 1
order = [n.decode() if isinstance(n, bytes) else n for n in a["parameter_order"][()]]
assert sorted(order) == sorted(gb.keys()) and len(order) > 60, "different or missing tensors"
exempt = order[-1]  # the last layer's bias: zero in exact arithmetic (spatial softmax)
assert exempt.endswith(".bias"), exempt
worst = []
for name in order:
    x = np.asarray(ga[name][()], dtype=np.float64)
    y = np.asarray(gb[name][()], dtype=np.float64)
    assert x.shape == y.shape, name
    norm = np.linalg.norm(x)
    assert norm > 0 or name == exempt, name + ": zero gradient"
    if name != exempt:
        worst.append((np.linalg.norm(x - y) / norm, name))
worst.sort(reverse=True)
print(f"step {ga.attrs['global_step']}, {len(worst)} tensors (+1 exempt): worst {worst[0][0]:.1e} ({worst[0][1]}), "
      f"median {worst[len(worst) // 2][0]:.1e}")
sys.exit(0 if worst[0][0] < 1e-5 else 1)
PYEOF
}

second_opinions=0
for case in "multiple 21 1" "remainder 22 2"; do
  read -r split step batch <<<"$case"
  dump 7 "$split" "$step" 1 mpi "$batch"
  for backend in mpi gloo; do
    for np in 2 4; do
      dump 7 "$split" "$step" "$np" "$backend" "$batch"
      echo -n "$split split, 1 rank vs $np ranks ($backend): "
      compare 7 "${split}_r1_mpi" "${split}_r${np}_$backend" && continue
      # A kink in seed 7's data, or an error: seed 8's trajectory decides.
      [[ -n ${start[8/multiple]:-} ]] || prepare 8
      dump 8 "$split" "$step" 1 mpi "$batch"
      dump 8 "$split" "$step" "$np" "$backend" "$batch"
      echo -n "  the same on seed 8's frames: "
      compare 8 "${split}_r1_mpi" "${split}_r${np}_$backend" ||
        fail "$split split: $np ranks with $backend differ from one rank on two data sets"
      second_opinions=$((second_opinions + 1))
    done
  done
done
(( second_opinions <= 2 )) || fail "$second_opinions of 8 comparisons needed seed 8: more than ties explain"
grep -q "gradient all-reduce" "$SCRATCH/seed7/multiple_r2_mpi.log" || fail "no overlap report in the 2-rank log"
echo "equivalence_ddp: ok"
