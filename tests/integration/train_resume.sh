# --resume continues exactly: a run interrupted after epoch 2 and resumed reaches,
# bit for bit, the weights, BN statistics, Adam moments and metrics rows of an
# uninterrupted 3-epoch run (CPU, augmentation on, backbone unfrozen mid-run).
source "$(dirname "$0")/lib/common.sh"
command -v h5diff >/dev/null || skip "h5diff (hdf5-tools) missing"
"$TRAINER" synth --out "$SCRATCH/small.h5" --frames 24 --size 64 --keypoints 3 --seed 2 >/dev/null || fail "synth"
cat >"$SCRATCH/small.cfg" <<CFG
[data]
data_files = $SCRATCH/small.h5
image_resize_height = 64
image_resize_width = 64
[training]
imgaug = dlc
train_batch_size = 8
val_batch_size = 8
max_epochs = 3
train_prob = 0.8
val_prob = 0.1
unfreezing_epoch = 1
lr_scheduler_milestones = [2]
check_val_every_n_epoch = 1
num_workers = 2
[model]
backbone = resnet18
CFG
"$TRAINER" train --config "$SCRATCH/small.cfg" --out "$SCRATCH/full" >"$SCRATCH/full.log" 2>&1 || { cat "$SCRATCH/full.log"; fail "full run"; }
"$TRAINER" train --config "$SCRATCH/small.cfg" --out "$SCRATCH/part" --training.max_epochs 2 >"$SCRATCH/part.log" 2>&1 \
  || { cat "$SCRATCH/part.log"; fail "first part"; }
cp "$SCRATCH/part/checkpoints/last.h5" "$SCRATCH/after2.h5"
"$TRAINER" train --config "$SCRATCH/small.cfg" --resume "$SCRATCH/part/checkpoints/last.h5" >"$SCRATCH/resume.log" 2>&1 \
  || { cat "$SCRATCH/resume.log"; fail "resume"; }
grep -q "resumed from .* after epoch 1" "$SCRATCH/resume.log" || { cat "$SCRATCH/resume.log"; fail "resume message"; }
h5diff "$SCRATCH/full/checkpoints/last.h5" "$SCRATCH/part/checkpoints/last.h5" /model /model \
  || fail "weights differ after resume"
h5diff "$SCRATCH/full/checkpoints/last.h5" "$SCRATCH/part/checkpoints/last.h5" /optimizer /optimizer \
  || fail "optimizer state differs after resume"
# The interrupted checkpoint really was different (the test is not vacuous).
if h5diff -q "$SCRATCH/full/checkpoints/last.h5" "$SCRATCH/after2.h5" /model /model; then fail "epoch 2 and 3 weights are equal"; fi
# metrics.csv: same rows except timing columns (epoch and step rows, the step losses included).
cut -d, -f1-7,10 "$SCRATCH/full/metrics.csv" >"$SCRATCH/a.csv"
cut -d, -f1-7,10 "$SCRATCH/part/metrics.csv" >"$SCRATCH/b.csv"
diff "$SCRATCH/a.csv" "$SCRATCH/b.csv" || fail "metrics.csv differs"
[[ $(epoch_rows "$SCRATCH/a.csv" | wc -l) == 3 ]] || fail "metrics.csv epoch rows"
echo "PASSED"
