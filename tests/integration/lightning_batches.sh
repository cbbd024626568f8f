# Lightning's batch settings on 2 ranks (synthetic data, a few seconds):
# limit_train_batches=3 (3 batches per epoch of the 5 a pass has), accumulate_grad_batches=2
# (2 optimizer steps per epoch: batches 1-2, then the last alone), val_check_interval=2
# (a validation after batch 2 of each epoch, none at its end) and ckpt_every_n_epochs=1,
# which Lightning then saves at each validation, not at the epoch's end: epoch=0-step=1
# and epoch=1-step=3, as .h5 and (heatmap) as lightning-pose .ckpt files.
source "$(dirname "$0")/lib/common.sh"
"$TRAINER" synth --out "$SCRATCH/small.h5" --frames 40 --size 64 --keypoints 4 --seed 1 >/dev/null || fail "synth"
cat >"$SCRATCH/small.yaml" <<YAML
data:
  data_files: [$SCRATCH/small.h5]
  image_resize_dims: {height: 64, width: 64}
training:
  train_batch_size: 8
  val_batch_size: 8
  max_epochs: 2
  unfreezing_epoch: 0
  log_every_n_steps: 1
  check_val_every_n_epoch: 1
  num_workers: 1
  limit_train_batches: 3
  accumulate_grad_batches: 2
  val_check_interval: 2
  ckpt_every_n_epochs: 1
model:
  backbone: resnet18
  model_name: small
eval:
  predict_vids_after_training: false
YAML
timeout 600 $MPIRUN -np 2 "$TRAINER" train "$SCRATCH/small.yaml" --out "$SCRATCH/run" >"$SCRATCH/train.log" 2>&1 ||
  { cat "$SCRATCH/train.log"; fail "train"; }
grep -q "epoch: 3 batches (training.limit_train_batches = 3" "$SCRATCH/train.log" ||
  { cat "$SCRATCH/train.log"; fail "no 3-batch epochs announced"; }
grep -q "done: 2 epochs, 4 steps" "$SCRATCH/train.log" || { cat "$SCRATCH/train.log"; fail "not 4 optimizer steps"; }
m=$SCRATCH/run/metrics.csv
# Epoch rows at steps 2 and 4, without validation cells; validation rows at steps 1 and 3.
[[ $(epoch_rows "$m" | awk -F, '{print $2 ":" $4}' | tr '\n' ' ') == "2: 4: " ]] ||
  { cat "$m"; fail "epoch rows: expected steps 2 and 4 with no validation"; }
[[ $(awk -F, 'NR > 1 && $3 == "" && $4 != "" {print $2}' "$m" | tr '\n' ' ') == "1 3 " ]] ||
  { cat "$m"; fail "validation rows: expected steps 1 and 3"; }
for name in epoch=0-step=1 epoch=1-step=3; do
  [[ -f $SCRATCH/run/checkpoints/$name.h5 ]] || { ls "$SCRATCH/run/checkpoints"; fail "no checkpoints/$name.h5"; }
  [[ -f $SCRATCH/run/tb_logs/small/version_0/checkpoints/$name.ckpt ]] ||
    { ls -R "$SCRATCH/run/tb_logs"; fail "no lightning-pose $name.ckpt"; }
done
# The best checkpoint comes from a validation inside an epoch: named by that epoch.
best=$(cd "$SCRATCH/run/tb_logs/small/version_0/checkpoints" && ls ./*-best.ckpt) || fail "no -best.ckpt"
[[ $best == ./epoch=0-step=1-best.ckpt || $best == ./epoch=1-step=3-best.ckpt ]] ||
  fail "best checkpoint $best: not named by the epoch and step of its validation"
# A count above the epoch's batches: one error line, exit 2, before any step.
expect_fail 2 "^error: training.val_check_interval = 4 is more than the 3 training batches of an epoch" \
  "$TRAINER" train "$SCRATCH/small.yaml" --overrides training.val_check_interval=4 --out "$SCRATCH/bad"
echo "PASS: limit_train_batches, accumulate_grad_batches, val_check_interval and ckpt_every_n_epochs on 2 ranks"
