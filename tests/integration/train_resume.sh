# --resume continues exactly: a run interrupted after epoch 2 and resumed reaches,
# bit for bit, the weights, BN statistics, Adam moments and metrics rows of an
# uninterrupted 3-epoch run (CPU, augmentation on, backbone unfrozen mid-run). A refused
# --resume writes nothing; another split warns; a new run in a used folder sets the
# old checkpoints aside; a run refused during its set-up touches no folder.
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
# --resume without a configuration continues with the run's own config.ini (as predict
# reads it), not the defaults: the same weights again.
mkdir -p "$SCRATCH/noconf/checkpoints"
cp "$SCRATCH/after2.h5" "$SCRATCH/noconf/checkpoints/last.h5"
cp "$SCRATCH/part/config.ini" "$SCRATCH/noconf/config.ini"
"$TRAINER" train --resume "$SCRATCH/noconf/checkpoints/last.h5" >"$SCRATCH/noconf.log" 2>&1 ||
  { cat "$SCRATCH/noconf.log"; fail "--resume without --config"; }
grep -q "^configuration: $SCRATCH/noconf/config.ini" "$SCRATCH/noconf.log" || { cat "$SCRATCH/noconf.log"; fail "no configuration line"; }
h5diff "$SCRATCH/full/checkpoints/last.h5" "$SCRATCH/noconf/checkpoints/last.h5" /model /model ||
  fail "--resume without --config did not continue the run"
# The interrupted checkpoint really was different (the test is not vacuous).
if h5diff -q "$SCRATCH/full/checkpoints/last.h5" "$SCRATCH/after2.h5" /model /model; then fail "epoch 2 and 3 weights are equal"; fi
# metrics.csv: same rows except timing columns (epoch and step rows, the step losses included).
cut -d, -f1-7,10 "$SCRATCH/full/metrics.csv" >"$SCRATCH/a.csv"
cut -d, -f1-7,10 "$SCRATCH/part/metrics.csv" >"$SCRATCH/b.csv"
diff "$SCRATCH/a.csv" "$SCRATCH/b.csv" || fail "metrics.csv differs"
[[ $(epoch_rows "$SCRATCH/a.csv" | wc -l) == 3 ]] || fail "metrics.csv epoch rows"

# A refused --resume (another backbone) leaves the run folder as it was.
cp -r "$SCRATCH/full" "$SCRATCH/kept"
(cd "$SCRATCH/kept" && md5sum config.ini config.yaml split.csv train_status.json metrics.csv checkpoints/*.h5) >"$SCRATCH/kept.md5"
expect_fail 2 "is a resnet18 with 3 keypoints .* but the configuration asks for resnet34" \
  "$TRAINER" train --config "$SCRATCH/small.cfg" --model.backbone resnet34 --resume "$SCRATCH/kept/checkpoints/last.h5"
(cd "$SCRATCH/kept" && md5sum -c --quiet "$SCRATCH/kept.md5") || fail "a refused --resume changed the run folder"
# A resume under another split is allowed, with a warning naming what changed.
"$TRAINER" train --config "$SCRATCH/small.cfg" --training.max_epochs 4 --training.train_prob 0.5 \
  --resume "$SCRATCH/kept/checkpoints/last.h5" >"$SCRATCH/split.log" 2>&1 || { cat "$SCRATCH/split.log"; fail "resume, other split"; }
grep -q "warning: --resume .*: the data or its split differs from the run's (train_prob = 0.5 (was 0.8))" \
  "$SCRATCH/split.log" || { cat "$SCRATCH/split.log"; fail "no warning for another split"; }
# A new run in a folder holding a run: the old checkpoints are set aside, not taken for
# this run's (a 1-step run has no best.h5 of its own: its predictions use its last.h5).
"$TRAINER" train --config "$SCRATCH/small.cfg" --out "$SCRATCH/kept" --max-steps 1 >"$SCRATCH/again.log" 2>&1 ||
  { cat "$SCRATCH/again.log"; fail "a new run in a used folder"; }
grep -q "held another run's checkpoints: moved to $SCRATCH/kept/checkpoints/before-" "$SCRATCH/again.log" ||
  { cat "$SCRATCH/again.log"; fail "no word on the set-aside checkpoints"; }
grep -q "predictions with $SCRATCH/kept/checkpoints/last.h5" "$SCRATCH/again.log" ||
  { cat "$SCRATCH/again.log"; fail "the new run's predictions did not use its own last.h5"; }
[[ ! -e $SCRATCH/kept/checkpoints/best.h5 ]] || fail "the old run's best.h5 stayed in place"
ls "$SCRATCH"/kept/checkpoints/before-*/best.h5 >/dev/null || fail "the old run's best.h5 was not kept aside"
grep -qE '"status": "COMPLETED", "progress": \{"completed": 3, "total": 3' "$SCRATCH/kept/train_status.json" ||
  { cat "$SCRATCH/kept/train_status.json"; fail "train_status.json after --max-steps"; }
# A run refused during its set-up (here: a val_check_interval longer than the epoch,
# found once the loaders are built) leaves a finished run in its folder as it was:
# nothing set aside, nothing rewritten; and a fresh --out is not created at all.
before=$(cd "$SCRATCH/full" && find . -type f -newer "$SCRATCH/small.cfg" -printf '%p %s %T@\n' | sort | md5sum)
expect_fail 2 "training.val_check_interval = 1000 is more than" "$TRAINER" train --config "$SCRATCH/small.cfg" \
  --out "$SCRATCH/full" --training.val_check_interval 1000
[[ $(cd "$SCRATCH/full" && find . -type f -newer "$SCRATCH/small.cfg" -printf '%p %s %T@\n' | sort | md5sum) == "$before" ]] ||
  fail "a refused run changed the finished run's folder: $(ls -R "$SCRATCH/full" | head -20)"
! ls -d "$SCRATCH"/full/checkpoints/before-* >/dev/null 2>&1 || fail "a refused run set the finished run's checkpoints aside"
# The same for a --dump-gradients-step the run never reaches (checked by the loop too).
expect_fail 2 "cannot dump the gradients of step 100: the run stops after step 2" "$TRAINER" train \
  --config "$SCRATCH/small.cfg" --out "$SCRATCH/full" --max-steps 2 --dump-gradients "$SCRATCH/g.h5" --dump-gradients-step 100
[[ $(cd "$SCRATCH/full" && find . -type f -newer "$SCRATCH/small.cfg" -printf '%p %s %T@\n' | sort | md5sum) == "$before" ]] ||
  fail "a run refused over --dump-gradients-step changed the finished run's folder"
expect_fail 2 "training.val_check_interval = 1000 is more than" "$TRAINER" train --config "$SCRATCH/small.cfg" \
  --out "$SCRATCH/never" --training.val_check_interval 1000
[[ ! -e $SCRATCH/never ]] || fail "a refused run left a run folder behind: $(ls -R "$SCRATCH/never")"
echo "PASSED"
