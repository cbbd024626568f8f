# Semi-supervised training (model.losses_to_use): lightning-pose's unsupervised
# losses on unlabelled video frames next to the labelled batches.
# - trains on 1 and 2 ranks with temporal + pca_singleview on a video the test
#   writes itself; metrics.csv and TensorBoard carry each term and the warm-up;
# - the 2-rank step equals the 1-rank step: gradients of one semi-supervised step
#   (pca_singleview, median-centred; sync BN), from a trained checkpoint, agree per
#   tensor to 2e-4.
#   Not 1e-5 as the supervised step in equivalence_ddp.sh: the unsupervised gradient
#   goes through the soft-argmax's softmax(1000 x heatmap), which multiplies the
#   float32 reassociation noise of the heatmaps by about 1000 x max(heatmap) (~50):
#   measured here 7e-7 median / 2.4e-6 worst for the supervised step and 1.4e-5 /
#   8.3e-5 for the semi-supervised one (gray frames since 2026-11-25; 4.2e-5 with RGB),
#   where the unsupervised gradient is ~500x the supervised (log_weight 0); 2 vs 4
#   ranks differ as much as 1 vs 2.
#   A real error (a frame of the wrong rank, a row missing) moves the unsupervised
#   gradient, 2,000x the supervised one, by far more.
#   (temporal is left out: each rank's sequence has its own consecutive pairs, so R
#   ranks see R - 1 fewer pairs than one rank, as in lightning-pose on R GPUs.)
# - a resumed run continues with the same unlabelled sequences, and the epoch cut by
#   the stop logs the same unsupervised means as the uninterrupted run;
# - heatmap_mhcrnn takes lightning-pose's unlabelled context batches
#   (dali.context.train.batch_size, ceil((B - 4) / G) + 4 frames per rank, each frame
#   through the backbone once) on 1 and 2 ranks, and its 2-rank semi-supervised step
#   equals the 1-rank step (2e-4) with a ViT backbone: the 4 frames two ranks' sequences
#   share are in both ranks' batches, so a backbone with batch norms (statistics over
#   the batch) computes another step on 2 ranks, as lightning-pose does on 2 GPUs;
#   LayerNorm works per token, and the overlap's gradients add up across the ranks;
# - bad settings are `error:` + exit 2: an unknown loss, pca_multiview without
#   views, a sequence shorter than the world, a video shorter than a sequence, no
#   video_dir, a missing video folder.
source "$(dirname "$0")/lib/common.sh"
TOOL=${TRAINER_TEST_VIDEO_TOOL:-$(dirname "$TRAINER")/tests/test_video_tool}
[[ -x $TOOL ]] || fail "test helper $TOOL not built (target test_video_tool)"
PY=/usr/bin/python3

"$TRAINER" synth --out "$SCRATCH/frames.h5" --frames 40 --size 64 --keypoints 3 --seed 5 >/dev/null || fail "synth"
mkdir -p "$SCRATCH/videos" "$SCRATCH/short"
"$TOOL" write "$SCRATCH/videos/session1.avi" 48 64 64 || fail "video_tool write"
"$TOOL" write "$SCRATCH/short/tiny.avi" 5 64 64 || fail "video_tool write"
mkdir -p "$SCRATCH/mixed"
"$TOOL" write "$SCRATCH/mixed/a.avi" 16 64 64 && "$TOOL" write "$SCRATCH/mixed/b.avi" 16 96 64 || fail "video_tool write"
config() {  # config FILE LOSSES [extra INI lines for [losses]]
  cat >"$1" <<CFG
[data]
data_files = $SCRATCH/frames.h5
image_resize_height = 64
image_resize_width = 64
video_dir = $SCRATCH/videos
[training]
imgaug = default
train_batch_size = 16
val_batch_size = 8
max_epochs = 1000
train_prob = 0.8
val_prob = 0.2
learning_rate = 1e-3
unfreezing_epoch = 0
check_val_every_n_epoch = 2
log_every_n_steps = 1
unlabeled_sequence_length = 8
num_workers = 1
[model]
backbone = resnet18
losses_to_use = $2
[losses]
pca_singleview_log_weight = 0
pca_singleview_components_to_keep = 0.9
pca_singleview_epsilon = 0
temporal_log_weight = 0
temporal_epsilon = 0
temporal_prob_threshold = 0
anneal_init_val = 1
anneal_freeze_until_epoch = 0
${3:-}
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

# ---- trains on 1 and 2 ranks; each term in metrics.csv -------------------------
config "$SCRATCH/both.cfg" "[temporal, pca_singleview]"
"$TRAINER" plan --config "$SCRATCH/both.cfg" --nodes 1 --gpus-per-node 2 >"$SCRATCH/plan.txt" 2>&1 \
  || { cat "$SCRATCH/plan.txt"; fail "plan"; }
grep -q "unlabelled video frames per step: 8" "$SCRATCH/plan.txt" || { cat "$SCRATCH/plan.txt"; fail "plan: no sequence"; }
grep -qE "^ +1 +0 +1 +gpu:1 +8 +4 +[0-9]+ +- +4 " "$SCRATCH/plan.txt" \
  || { cat "$SCRATCH/plan.txt"; fail "plan: rank 1 should get 4 unlabelled frames"; }
# imgaug dlc: the unlabelled frames are augmented too (keypoints mapped back).
for np in 1 2; do
  train "$SCRATCH/both_r$np.log" "$np" --config "$SCRATCH/both.cfg" --out "$SCRATCH/both_r$np" --training.max_epochs 4 \
    --training.imgaug dlc
  grep -q "pca_singleview: PCA of the labelled keypoints keeps" "$SCRATCH/both_r$np.log" \
    || { cat "$SCRATCH/both_r$np.log"; fail "no PCA summary"; }
  grep -q "augmented as lightning-pose's DALI pipeline" "$SCRATCH/both_r$np.log" \
    || { cat "$SCRATCH/both_r$np.log"; fail "unlabelled frames not augmented under imgaug dlc"; }
  m=$SCRATCH/both_r$np/metrics.csv
  head -1 "$m" | grep -q "total_unsupervised_importance,train_temporal_loss,train_pca_singleview_loss" \
    || fail "metrics.csv header lacks the unsupervised columns"
  rows=$(epoch_rows "$m" | awk -F, '$16 != "" && $17 + 0 > 0 && $18 + 0 >= 0 && $17 == $17 + 0' | wc -l)
  [[ $rows == 4 ]] || { cat "$m"; fail "$np ranks: expected 4 epoch rows with a temporal and a pca loss, got $rows"; }
done
# TensorBoard: each term under lightning-pose's names (when the test tools have tensorboard).
if TBPY=$(test_python tensorboard.backend.event_processing.event_accumulator); then
  "$TBPY" - "$SCRATCH/both_r2/tb_logs" <<'PYEOF' || fail "TensorBoard scalars"
import csv, glob, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
run = glob.glob(sys.argv[1] + "/*/version_0")[0]
acc = EventAccumulator(run); acc.Reload()
tags = set(acc.Tags()["scalars"])
# Logged at every logged step, as lightning-pose's training_step logs them.
rows = list(csv.DictReader(open(sys.argv[1] + "/../metrics.csv")))
steps = sorted(int(r["step"]) for r in rows if r["train_loss_step"])
for tag in ["total_unsupervised_importance", "train_temporal_loss", "train_temporal_loss_weighted", "temporal_weight",
            "train_pca_singleview_loss", "train_pca_singleview_loss_weighted", "pca_singleview_weight", "total_loss",
            "train_supervised_rmse"]:
    assert tag in tags, (tag, sorted(tags))
    assert sorted(e.step for e in acc.Scalars(tag)) == steps, tag
print("tensorboard: unsupervised scalars ok")
PYEOF
else
  echo "SKIP (part): no python with tensorboard for the TensorBoard check"
fi

# ---- a resumed run continues: the same sequences, the same weights ----------------
train "$SCRATCH/cut.log" 1 --config "$SCRATCH/both.cfg" --out "$SCRATCH/cut" --max-steps 5 --training.imgaug dlc
train "$SCRATCH/resumed.log" 1 --config "$SCRATCH/both.cfg" --out "$SCRATCH/cut" --resume auto --training.max_epochs 4 \
  --training.imgaug dlc
"$PY" - "$SCRATCH/both_r1/metrics.csv" "$SCRATCH/cut/metrics.csv" <<'PYEOF' || fail "resumed run differs"
import csv, sys
def epochs(path):
    rows = [r for r in csv.DictReader(open(path)) if r["train_loss"]]
    return [(r["epoch"], r["train_loss"], r["train_temporal_loss"], r["train_pca_singleview_loss"]) for r in rows]
a, b = epochs(sys.argv[1]), epochs(sys.argv[2])
assert len(a) == len(b), (a, b)
# Every epoch's means, the one cut by the stop included (its sums before the stop
# travel in last.h5); the last 1-2 digits of %.8g may differ by summation order.
for x, y in zip(a, b):
    assert x[0] == y[0] and all(abs(float(p) - float(q)) <= 1e-6 * max(1.0, abs(float(p))) for p, q in zip(x[1:], y[1:])), (x, y)
assert a[-1] == b[-1], (a, b)
print("resume: every epoch's losses equal, the last identical", a[-1])
PYEOF

# ---- 2 ranks = 1 rank for a semi-supervised step ----------------------------------
if "$PY" -c "import h5py, numpy" 2>/dev/null; then
  config "$SCRATCH/pca.cfg" "[pca_singleview]"
  # A trained starting point (40 supervised steps): at initialization gradients are noise.
  train "$SCRATCH/base.log" 1 --config "$SCRATCH/pca.cfg" --out "$SCRATCH/base" --max-steps 40 \
    --model.losses_to_use "[]"
  checkpoint=$SCRATCH/base/checkpoints/last.h5
  # With lightning-pose's median centring, so that the step covers it.
  for np in 1 2; do
    train "$SCRATCH/eq_r$np.log" "$np" --config "$SCRATCH/pca.cfg" --out "$SCRATCH/eq_r$np" --resume "$checkpoint" \
      --max-steps 41 --dump-gradients "$SCRATCH/eq_r$np.h5" --dump-gradients-step 41 \
      --losses.pca_singleview_centering_method median
    grep -q "pca_singleview: PCA of the labelled keypoints (each frame's median subtracted) keeps" "$SCRATCH/eq_r$np.log" \
      || { cat "$SCRATCH/eq_r$np.log"; fail "no median-centred PCA in the log"; }
  done
  "$PY" - "$SCRATCH/eq_r1.h5" "$SCRATCH/eq_r2.h5" <<'PYEOF' || fail "2 ranks differ from 1 rank in a semi-supervised step"
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
ga, gb = a["gradients"], b["gradients"]
order = [n.decode() if isinstance(n, bytes) else n for n in a["parameter_order"][()]]
exempt = order[-1]  # the last layer's bias: zero in exact arithmetic (spatial softmax)
worst = max((np.linalg.norm(np.float64(ga[n][()]) - gb[n][()]) / np.linalg.norm(np.float64(ga[n][()])), n)
            for n in order if n != exempt)
print(f"semi-supervised step, 1 rank vs 2 ranks: worst per-tensor difference {worst[0]:.1e} ({worst[1]})")
sys.exit(0 if worst[0] < 2e-4 else 1)
PYEOF
  # With the warm-up factor at 0 the unsupervised pass adds exactly nothing: the
  # labelled gradients set aside and added back per parameter are the supervised step's.
  train "$SCRATCH/zero.log" 1 --config "$SCRATCH/pca.cfg" --out "$SCRATCH/zero" --resume "$checkpoint" \
    --max-steps 41 --dump-gradients "$SCRATCH/zero.h5" --dump-gradients-step 41 --losses.anneal_init_val 0 \
    --losses.anneal_increase_factor 0
  train "$SCRATCH/sup.log" 1 --config "$SCRATCH/pca.cfg" --out "$SCRATCH/sup" --resume "$checkpoint" \
    --max-steps 41 --dump-gradients "$SCRATCH/sup.h5" --dump-gradients-step 41 --model.losses_to_use "[]"
  "$PY" - "$SCRATCH/zero.h5" "$SCRATCH/sup.h5" <<'PYEOF' || fail "a semi-supervised step at weight 0 is not the supervised step"
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r")["gradients"], h5py.File(sys.argv[2], "r")["gradients"]
assert sorted(a.keys()) == sorted(b.keys())
bad = [n for n in a.keys() if not np.array_equal(a[n][()], b[n][()])]
assert not bad, bad[:5]
print(f"weight 0: all {len(a.keys())} gradients bit-identical to the supervised step")
PYEOF
else
  echo "SKIP (part): /usr/bin/python3 has no h5py/numpy for the equivalence check"
fi

# ---- heatmap_mhcrnn: unlabelled context batches ---------------------------------------
"$TRAINER" synth --out "$SCRATCH/clips.h5" --frames 40 --size 64 --keypoints 3 --seed 5 --videos 2 >/dev/null \
  || fail "synth --videos"
mhcrnn=(--data.data_files "$SCRATCH/clips.h5" --model.model_type heatmap_mhcrnn --training.context_batch_size 8
        --training.train_batch_size 8 --model.backbone vits_dino)
config "$SCRATCH/ctx.cfg" "[pca_singleview]"
"$TRAINER" plan --config "$SCRATCH/ctx.cfg" --nodes 1 --gpus-per-node 2 "${mhcrnn[@]}" >"$SCRATCH/ctx_plan.txt" 2>&1 \
  || { cat "$SCRATCH/ctx_plan.txt"; fail "plan (heatmap_mhcrnn)"; }
grep -q "unlabelled video frames per step: 8 (dali.context.train.batch_size)" "$SCRATCH/ctx_plan.txt" \
  || { cat "$SCRATCH/ctx_plan.txt"; fail "plan: no context batch for the unlabelled frames"; }
grep -qE "^ +1 +0 +1 +gpu:1 +4 +4 +[0-9]+ +6 +6 " "$SCRATCH/ctx_plan.txt" \
  || { cat "$SCRATCH/ctx_plan.txt"; fail "plan: rank 1 should get ceil((8 - 4) / 2) + 4 = 6 unlabelled frames"; }
if "$PY" -c "import h5py, numpy" 2>/dev/null; then
  # 80 supervised steps: after 20 the context model is still so close to initialization
  # that float noise alone gave 2e-2 here (9.5e-5 after 80).
  train "$SCRATCH/ctx_base.log" 1 --config "$SCRATCH/ctx.cfg" --out "$SCRATCH/ctx_base" --max-steps 80 \
    --model.losses_to_use "[]" "${mhcrnn[@]}"
  for np in 1 2; do
    train "$SCRATCH/ctx_r$np.log" "$np" --config "$SCRATCH/ctx.cfg" --out "$SCRATCH/ctx_r$np" "${mhcrnn[@]}" \
      --resume "$SCRATCH/ctx_base/checkpoints/last.h5" --max-steps 81 --dump-gradients "$SCRATCH/ctx_r$np.h5" \
      --dump-gradients-step 81
    grep -q "rows of 5 context frames" "$SCRATCH/ctx_r$np.log" || { cat "$SCRATCH/ctx_r$np.log"; fail "no context rows"; }
  done
  train "$SCRATCH/ctx_sup.log" 1 --config "$SCRATCH/ctx.cfg" --out "$SCRATCH/ctx_sup" "${mhcrnn[@]}" \
    --resume "$SCRATCH/ctx_base/checkpoints/last.h5" --max-steps 81 --dump-gradients "$SCRATCH/ctx_sup.h5" \
    --dump-gradients-step 81 --model.losses_to_use "[]"
  "$PY" - "$SCRATCH/ctx_r1.h5" "$SCRATCH/ctx_r2.h5" "$SCRATCH/ctx_sup.h5" <<'PYEOF' || fail "heatmap_mhcrnn: 2 ranks differ from 1 rank in a semi-supervised step"
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
sup = h5py.File(sys.argv[3], "r")["gradients"]
# The unsupervised term is there: the step differs from the supervised one.
moved = max(np.linalg.norm(np.float64(a["gradients"][n][()]) - sup[n][()]) / max(np.linalg.norm(sup[n][()]), 1e-30)
            for n in sup.keys())
assert moved > 1e-2, f"the semi-supervised step equals the supervised one ({moved:.1e})"
ga, gb = a["gradients"], b["gradients"]
order = [n.decode() if isinstance(n, bytes) else n for n in a["parameter_order"][()]]
# Exempt: each head's last bias (zero in exact arithmetic, spatial softmax), every
# attention key bias (a shift of a query's scores, which the softmax ignores: zero in
# exact arithmetic too) and any tensor whose gradient is zero on both sides.
norms = {n: np.linalg.norm(np.float64(ga[n][()])) for n in order}
checked = [n for n in order if norms[n] > 0 and not (n.endswith("bias") and np.array(ga[n]).size <= 4)
           and not n.endswith("attention.key.bias")]
worst = max((np.linalg.norm(np.float64(ga[n][()]) - gb[n][()]) / norms[n], n) for n in checked)
print(f"heatmap_mhcrnn semi-supervised step, 1 rank vs 2 ranks: worst per-tensor difference {worst[0]:.1e} "
      f"({worst[1]}) over {len(checked)} tensors")
sys.exit(0 if worst[0] < 2e-4 else 1)
PYEOF
else
  train "$SCRATCH/ctx_r2.log" 2 --config "$SCRATCH/ctx.cfg" --out "$SCRATCH/ctx_r2" "${mhcrnn[@]}" --max-steps 3
  echo "SKIP (part): /usr/bin/python3 has no h5py/numpy for the heatmap_mhcrnn equivalence check"
fi

# ---- bad settings: one error line, exit 2 -----------------------------------------
config "$SCRATCH/bad.cfg" "[temporal]"
expect_fail 2 "^error: .*losses_to_use.*(temporal_heatmap_mse|names from)" \
  "$TRAINER" train --config "$SCRATCH/bad.cfg" --out "$SCRATCH/bad" --model.losses_to_use "[temporal_heatmap_mse]"
expect_fail 2 "^error: .*pca_multiview.*mirrored_column_matches" \
  "$TRAINER" train --config "$SCRATCH/bad.cfg" --out "$SCRATCH/bad" --model.losses_to_use "[pca_multiview]"
expect_fail 2 "^error: .*sequence_length=1 is smaller than the 2" \
  $MPIRUN -np 2 "$TRAINER" train --config "$SCRATCH/bad.cfg" --out "$SCRATCH/bad" --training.unlabeled_sequence_length 1
expect_fail 2 "^error: video .*tiny.avi has 5 frames, fewer than one unlabelled sequence of 8" \
  "$TRAINER" train --config "$SCRATCH/bad.cfg" --out "$SCRATCH/bad" --data.video_dir "$SCRATCH/short"
expect_fail 2 "^error: .*data.video_dir is not set" \
  "$TRAINER" train --config "$SCRATCH/bad.cfg" --out "$SCRATCH/bad" --data.video_dir ""
expect_fail 2 "^error: .*nowhere" \
  "$TRAINER" train --config "$SCRATCH/bad.cfg" --out "$SCRATCH/bad" --data.video_dir "$SCRATCH/nowhere"
expect_fail 2 "^error: the unlabelled videos have different frame sizes" \
  "$TRAINER" train --config "$SCRATCH/bad.cfg" --out "$SCRATCH/bad" --data.video_dir "$SCRATCH/mixed"
expect_fail 2 "^error: .*pca_singleview_epsilon.*>= 0, or null" \
  "$TRAINER" train --config "$SCRATCH/bad.cfg" --out "$SCRATCH/bad" --losses.pca_singleview_epsilon -5
echo "train_semi: ok"
