# metrics.csv step rows and TensorBoard event files, read back with the real
# `tensorboard` package (EventAccumulator): 2 ranks, lightning-pose's scalar names and
# folder layout, every value checked against metrics.csv; then a resume from an
# earlier checkpoint into the same run, after which TensorBoard shows each step once,
# with the resumed run's values; and a resume inside an epoch.
source "$(dirname "$0")/lib/common.sh"
PY=$(test_python tensorboard) || skip "no Python with the tensorboard package (scripts/setup.sh test installs it)"
"$TRAINER" synth --out "$SCRATCH/small.h5" --frames 40 --size 64 --keypoints 4 --seed 1 >/dev/null || fail "synth"
cat >"$SCRATCH/small.cfg" <<CFG
[data]
data_files = $SCRATCH/small.h5
image_resize_height = 64
image_resize_width = 64
[training]
imgaug = default
train_batch_size = 8
val_batch_size = 8
max_epochs = 2
unfreezing_epoch = 1
log_every_n_steps = 2
check_val_every_n_epoch = 1
num_workers = 1
[model]
backbone = resnet18
model_name = mouse
heatmap_loss_type = kl
CFG
$MPIRUN -np 2 "$TRAINER" train --config "$SCRATCH/small.cfg" --out "$SCRATCH/run" >"$SCRATCH/train.log" 2>&1 ||
  { cat "$SCRATCH/train.log"; fail "train"; }
cp "$SCRATCH/run/checkpoints/last.h5" "$SCRATCH/after2.h5"
ls "$SCRATCH"/run/tb_logs/mouse/version_0/events.out.tfevents.* >/dev/null || fail "no event file in tb_logs/mouse/version_0"

check() {  # check RUN_DIR EPOCHS: every scalar against metrics.csv
  "$PY" - "$1" "$2" <<'PY'
import csv, math, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
run, epochs = sys.argv[1], int(sys.argv[2])
acc = EventAccumulator(f"{run}/tb_logs/mouse/version_0", size_guidance={"scalars": 0})
acc.Reload()
tags = set(acc.Tags()["scalars"])
want = {"train_supervised_loss", "train_heatmap_kl_loss", "train_heatmap_kl_loss_weighted", "heatmap_kl_weight",
        "epoch", "val_supervised_loss", "val_supervised_rmse", "val_heatmap_kl_loss",
        "val_heatmap_kl_loss_weighted", "lr-Adam/backbone", "lr-Adam/head", "train_supervised_rmse"}
assert want <= tags, f"missing tags: {want - tags}"
scalars = {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in tags}
rows = list(csv.DictReader(open(f"{run}/metrics.csv")))
step_rows = [r for r in rows if r["train_loss_step"]]
epoch_rows = [r for r in rows if r["train_loss"]]
assert len(epoch_rows) == epochs, (len(epoch_rows), epochs)
close = lambda a, b: math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)

def series(tag):
    steps = [s for s, _ in scalars[tag]]
    assert len(steps) == len(set(steps)), f"{tag}: a step logged twice: {steps}"
    return dict(scalars[tag])

loss = series("train_supervised_loss")
assert sorted(loss) == [int(r["step"]) for r in step_rows], (sorted(loss), [r["step"] for r in step_rows])
unweighted, weighted, weight = (series(t) for t in ("train_heatmap_kl_loss", "train_heatmap_kl_loss_weighted",
                                                     "heatmap_kl_weight"))
train_rmse = series("train_supervised_rmse")
for r in step_rows:
    s, v = int(r["step"]), float(r["train_loss_step"])
    assert close(loss[s], v) and close(weighted[s], v) and close(unweighted[s], 2 * v) and weight[s] == 0.5, (s, v)
    assert close(train_rmse[s], float(r["train_supervised_rmse"])), r
val, rmse, val_unweighted = (series(t) for t in ("val_supervised_loss", "val_supervised_rmse",
                                                 "val_heatmap_kl_loss"))
assert sorted(val) == [int(r["step"]) for r in epoch_rows]
for r in epoch_rows:
    s = int(r["step"])
    assert close(val[s], float(r["val_loss"])) and close(rmse[s], float(r["val_supervised_rmse"])), r
    assert close(val_unweighted[s], 2 * float(r["val_loss"])), r
# lr-<optimizer>/<group> at each epoch's first step.
head, backbone = series("lr-Adam/head"), series("lr-Adam/backbone")
starts = [1] + [int(r["step"]) + 1 for r in epoch_rows[:-1]]
assert sorted(head) == starts and sorted(backbone) == starts, (sorted(head), starts)
for start, r in zip(starts, epoch_rows):
    assert close(head[start], float(r["lr_head"])) and close(backbone[start], float(r["lr_backbone"])), r
print(f"{run}: {len(tags)} tags, {len(step_rows)} steps and {epochs} epochs match metrics.csv")
PY
}
check "$SCRATCH/run" 2 || fail "TensorBoard scalars of the first run"

# Train a third epoch, then resume the same run again from the checkpoint after
# epoch 2 with other settings: the third epoch is logged twice on disk, and TensorBoard
# must show only the second time (its values are what metrics.csv holds now).
$MPIRUN -np 2 "$TRAINER" train --config "$SCRATCH/small.cfg" --training.max_epochs 3 \
  --resume "$SCRATCH/run/checkpoints/last.h5" >"$SCRATCH/resume1.log" 2>&1 || { cat "$SCRATCH/resume1.log"; fail "resume 1"; }
$MPIRUN -np 2 "$TRAINER" train --config "$SCRATCH/small.cfg" --training.max_epochs 3 --training.train_batch_size 4 \
  --resume "$SCRATCH/after2.h5" --out "$SCRATCH/run" >"$SCRATCH/resume2.log" 2>&1 || { cat "$SCRATCH/resume2.log"; fail "resume 2"; }
[[ $(ls "$SCRATCH"/run/tb_logs/mouse/version_0/events.out.tfevents.* | wc -l) == 3 ]] || fail "a resumed run continues version_0"
[[ ! -d $SCRATCH/run/tb_logs/mouse/version_1 ]] || fail "a resumed run opened a new version"
check "$SCRATCH/run" 3 || fail "TensorBoard scalars after the resumes"

# Stopped inside an epoch (--max-steps), then resumed there: each epoch's learning
# rates stay one point at its first step (the resume does not log them again).
$MPIRUN -np 2 "$TRAINER" train --config "$SCRATCH/small.cfg" --max-steps 6 --out "$SCRATCH/mid" \
  >"$SCRATCH/mid.log" 2>&1 || { cat "$SCRATCH/mid.log"; fail "run stopped at step 6"; }
$MPIRUN -np 2 "$TRAINER" train --config "$SCRATCH/small.cfg" --resume "$SCRATCH/mid/checkpoints/last.h5" \
  >"$SCRATCH/mid-resume.log" 2>&1 || { cat "$SCRATCH/mid-resume.log"; fail "resume inside the epoch"; }
grep -q "resumed from .* in epoch 1 after batch" "$SCRATCH/mid-resume.log" ||
  { cat "$SCRATCH/mid-resume.log"; fail "the resume was not inside epoch 1"; }
check "$SCRATCH/mid" 2 || fail "TensorBoard scalars after a resume inside an epoch"
echo "PASSED"
