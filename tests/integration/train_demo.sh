# `trainer train` end to end on a small synthetic data set, with and without
# mpirun -np 1: output folder (config.ini, split.csv, metrics.csv, checkpoints),
# validation metrics, --save-initial and --max-steps, then `trainer predict`'s CSV.
source "$(dirname "$0")/lib/common.sh"
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
test_batch_size = 8
max_epochs = 2
train_prob = 0.8
val_prob = 0.1
unfreezing_epoch = 1
log_every_n_steps = 2
check_val_every_n_epoch = 1
num_workers = 1
[model]
backbone = resnet18
CFG
"$TRAINER" train --config "$SCRATCH/small.cfg" --out "$SCRATCH/run" --save-initial >"$SCRATCH/train.log" 2>&1 \
  || { cat "$SCRATCH/train.log"; fail "train"; }
for f in config.ini split.csv metrics.csv checkpoints/initial.h5 checkpoints/last.h5 checkpoints/best.h5; do
  [[ -s "$SCRATCH/run/$f" ]] || fail "missing $f"
done
grep -q "epoch 0/2  step 2 (2/5)  loss" "$SCRATCH/train.log" || { cat "$SCRATCH/train.log"; fail "no progress line"; }
grep -q "validation: loss" "$SCRATCH/train.log" || fail "no validation line"
# Where the run's time went: set-up, then the loop's parts, which add up to its total.
time_line=$(grep -E "^time: set-up [0-9.]+ s; training [0-9.]+ s: steps [0-9.]+ s, validation [0-9.]+ s, checkpoints and epoch ends -?[0-9.]+ s$" "$SCRATCH/train.log") ||
  { cat "$SCRATCH/train.log"; fail "no time line"; }
read -r total steps val other < <(echo "$time_line" | sed -E 's/.*training ([0-9.]+) s: steps ([0-9.]+) s, validation ([0-9.]+) s, checkpoints and epoch ends (-?[0-9.]+) s/\1 \2 \3 \4/')
awk -v t="$total" -v s="$steps" -v v="$val" -v o="$other" 'BEGIN { d = s + v + o - t; exit !(s > 0 && d < 0.25 && d > -0.25) }' ||
  fail "the time line's parts do not add up: $time_line"
[[ $(epoch_rows "$SCRATCH/run/metrics.csv" | wc -l) == 2 ]] || { cat "$SCRATCH/run/metrics.csv"; fail "metrics.csv should have 2 epoch rows"; }
# log_every_n_steps = 2 over 10 steps: step rows at steps 2, 4, ..., 10 with the step's loss.
[[ $(awk -F, 'NR > 1 && $3 == "" && $10 != ""' "$SCRATCH/run/metrics.csv" | cut -d, -f2 | tr '\n' ' ') == "2 4 6 8 10 " ]] ||
  { cat "$SCRATCH/run/metrics.csv"; fail "metrics.csv step rows"; }
# 36 train frames (lightning-pose gives a test set under 5 frames to train): 5 steps per epoch.
# Epoch 0: backbone frozen (lr 0); epoch 1: unfrozen at 0.1 x the head's lr.
epoch_rows "$SCRATCH/run/metrics.csv" | sed -n 1p | grep -qE '^0,5,[^,]+,[^,]+,[^,]+,0.001,0,' || fail "epoch 0 row: $(epoch_rows "$SCRATCH/run/metrics.csv" | sed -n 1p)"
epoch_rows "$SCRATCH/run/metrics.csv" | sed -n 2p | grep -qE '^1,10,[^,]+,[^,]+,[^,]+,0.001,0.0001,' || fail "epoch 1 row: $(epoch_rows "$SCRATCH/run/metrics.csv" | sed -n 2p)"
h5ls "$SCRATCH/run/checkpoints/last.h5/model" | grep -q "backbone.layer4.1.bn2.running_var" || fail "checkpoint names"

# mpirun -np 1 and --max-steps.
$MPIRUN -np 1 "$TRAINER" train --config "$SCRATCH/small.cfg" --out "$SCRATCH/run_mpi" --max-steps 3 >"$SCRATCH/mpi.log" 2>&1 \
  || { cat "$SCRATCH/mpi.log"; fail "mpirun -np 1 train"; }
grep -q "done: 0 epochs, 3 steps" "$SCRATCH/mpi.log" || { cat "$SCRATCH/mpi.log"; fail "--max-steps 3"; }

# Bad input is a user error, not a crash.
expect_fail 2 "cannot open checkpoint" "$TRAINER" train --config "$SCRATCH/small.cfg" --out "$SCRATCH/r2" --resume "$SCRATCH/nothing.h5"
expect_fail 2 "is not a weights file the trainer reads" "$TRAINER" train --config "$SCRATCH/small.cfg" --out "$SCRATCH/r3" --max-steps 1 --init-weights "$SCRATCH/run/split.csv"
expect_fail 2 "has no /model group" "$TRAINER" train --config "$SCRATCH/small.cfg" --out "$SCRATCH/r4" --max-steps 1 --init-weights "$SCRATCH/small.h5"

# --init-weights from torchvision weights (random ones: no network here), when torch is there.
# resnet18: 62 parameters + 2 x 19 BN running statistics = 100 tensors.
if /usr/bin/python3 -c "import torch, torchvision, h5py" 2>/dev/null; then
  /usr/bin/python3 "$REPO/scripts/torchvision_to_h5.py" --arch resnet18 --random --out "$SCRATCH/tv18.h5" >/dev/null || fail "torchvision_to_h5.py"
  "$TRAINER" train --config "$SCRATCH/small.cfg" --out "$SCRATCH/r5" --max-steps 1 --init-weights "$SCRATCH/tv18.h5" >"$SCRATCH/init.log" 2>&1 \
    || { cat "$SCRATCH/init.log"; fail "--init-weights"; }
  grep -q "backbone: loaded 100 tensors" "$SCRATCH/init.log" || { cat "$SCRATCH/init.log"; fail "--init-weights count"; }
else
  echo "note: torch missing, --init-weights from torchvision not tested"
fi

# predict: DLC/lightning-pose CSV with a set column, one row per frame.
"$TRAINER" predict --checkpoint "$SCRATCH/run/checkpoints/best.h5" >"$SCRATCH/predict.log" 2>&1 || { cat "$SCRATCH/predict.log"; fail "predict"; }
# Asking for a GPU that is not there is a user error, not a crash.
if ! { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }; then
  if "$TRAINER" --version | grep -q 'cuda (CUDA'; then
    expect_fail 2 "no usable GPU" "$TRAINER" predict --checkpoint "$SCRATCH/run/checkpoints/best.h5" --accelerator gpu \
      --out "$SCRATCH/nogpu.csv"
  else
    expect_fail 2 "built without the GPU path" "$TRAINER" predict --checkpoint "$SCRATCH/run/checkpoints/best.h5" \
      --accelerator gpu --out "$SCRATCH/nogpu.csv"
  fi
  [[ ! -e "$SCRATCH/nogpu.csv" ]] || fail "a failed predict left a CSV behind"
fi
csv="$SCRATCH/run/predictions.csv"
[[ $(wc -l <"$csv") == 43 ]] || fail "predictions.csv: expected 3 header rows + 40 frames, got $(wc -l <"$csv")"
head -1 "$csv" | grep -qE '^scorer(,heatmap_tracker){12},set$' || fail "scorer row: $(head -1 "$csv")"
sed -n 2p "$csv" | grep -qE '^bodyparts,nose,nose,nose,ear_left' || fail "bodyparts row: $(sed -n 2p "$csv")"
sed -n 3p "$csv" | grep -qE '^coords(,x,y,likelihood){4},$' || fail "coords row: $(sed -n 3p "$csv")"
[[ $(tail -n +4 "$csv" | grep -cE ',(train|validation|test|unused)$') == 40 ]] || fail "set column"
[[ $(tail -n +4 "$csv" | grep -c ',validation$') == $(grep -c ',val$' "$SCRATCH/run/split.csv") ]] || fail "set column disagrees with split.csv"
echo "PASSED"
