# lightning-pose's steps per epoch on its mirror-mouse example (72 train frames, batch
# 16): semi-supervised (pca_singleview, as its config says) an epoch is
# max(10, ceil(72 / 16)) = 10 steps, the 5 labelled batches of a pass cycling, on 1 rank
# and on 2 (8 per rank: max(10, ceil(72 / 8)) = 10, every rank the same steps);
# supervised it stays one pass, 5 steps. Epoch-based things follow the longer epoch:
# metrics.csv's epoch rows land on steps 10 and 20.
source "$(dirname "$0")/lib/common.sh"
DATA="$(shared_data)/mirror-mouse-example"
[[ -f $DATA/CollectedData.csv && -d $DATA/videos ]] ||
  skip "$DATA/CollectedData.csv or its videos/ not found (set TRAINER_SHARED_DATA)"
DATA="$(cd "$DATA" && pwd)"
CONFIG="$REPO/tests/data/lightning-pose-configs/config_mirror-mouse-example.yaml"
# Only the data path and what keeps the run short: a small network and input, no
# predictions after training. The batch, split and losses are the file's.
COMMON=(data.data_dir="$DATA" eval.predict_vids_after_training=false model.backbone=resnet18
        data.image_resize_dims.height=128 data.image_resize_dims.width=128 training.num_workers=1)

# The epoch rows' steps, one per line.
epoch_steps() { epoch_rows "$1" | cut -d, -f2 | tr '\n' ' '; }

# 1 rank, two epochs.
"$TRAINER" train "$CONFIG" --overrides "${COMMON[@]}" training.max_epochs=2 --out "$SCRATCH/one" \
  >"$SCRATCH/one.log" 2>&1 || { cat "$SCRATCH/one.log"; fail "semi-supervised run on 1 rank"; }
grep -q "unsupervised losses: pca_singleview" "$SCRATCH/one.log" || { cat "$SCRATCH/one.log"; fail "not semi-supervised"; }
grep -q "epoch: 10 steps, the 5 labelled batches of a pass cycling" "$SCRATCH/one.log" ||
  { cat "$SCRATCH/one.log"; fail "1 rank: no 10-step epochs announced"; }
[[ $(epoch_steps "$SCRATCH/one/metrics.csv") == "10 20 " ]] ||
  { cat "$SCRATCH/one/metrics.csv"; fail "1 rank: epoch rows at steps '$(epoch_steps "$SCRATCH/one/metrics.csv")', expected 10 20"; }
grep -q "done: 2 epochs, 20 steps" "$SCRATCH/one.log" || fail "1 rank: not 20 steps in 2 epochs"
# The progress line counts the epoch's steps out of 10.
grep -q "epoch 0/2  step 10 (10/10)" "$SCRATCH/one.log" || fail "1 rank: no step 10 of 10 in epoch 0"
grep -q "epoch 1/2  step 11 (1/10)" "$SCRATCH/one.log" || fail "1 rank: epoch 1 does not start at step 11"

# 2 ranks: 8 per rank, still 10 steps per epoch, on both ranks.
timeout 600 $MPIRUN -np 2 "$TRAINER" train "$CONFIG" --overrides "${COMMON[@]}" training.max_epochs=1 \
  --out "$SCRATCH/two" >"$SCRATCH/two.log" 2>&1 || { cat "$SCRATCH/two.log"; fail "semi-supervised run on 2 ranks"; }
grep -q "epoch: 10 steps, the 5 labelled batches of a pass cycling" "$SCRATCH/two.log" ||
  { cat "$SCRATCH/two.log"; fail "2 ranks: no 10-step epochs announced"; }
[[ $(epoch_steps "$SCRATCH/two/metrics.csv") == "10 " ]] ||
  { cat "$SCRATCH/two/metrics.csv"; fail "2 ranks: the epoch row is not at step 10"; }
grep -q "done: 1 epochs, 10 steps" "$SCRATCH/two.log" || fail "2 ranks: not 10 steps"

# Gradient accumulation over semi-supervised steps (the unsupervised terms on from the
# start): 10 batches per epoch, an optimizer step every 2, so 5 steps.
"$TRAINER" train "$CONFIG" --overrides "${COMMON[@]}" training.max_epochs=1 training.accumulate_grad_batches=2 \
  callbacks.anneal_weight.init_val=1.0 --out "$SCRATCH/acc" >"$SCRATCH/acc.log" 2>&1 ||
  { cat "$SCRATCH/acc.log"; fail "semi-supervised run with accumulate_grad_batches=2"; }
grep -q "done: 1 epochs, 5 steps" "$SCRATCH/acc.log" || { cat "$SCRATCH/acc.log"; fail "accumulation: not 5 steps"; }
[[ $(epoch_steps "$SCRATCH/acc/metrics.csv") == "5 " ]] ||
  { cat "$SCRATCH/acc/metrics.csv"; fail "accumulation: the epoch row is not at step 5"; }
epoch_rows "$SCRATCH/acc/metrics.csv" | awk -F, '$15 != 1 || $17 == "" {exit 1}' ||
  { cat "$SCRATCH/acc/metrics.csv"; fail "accumulation: no pca_singleview loss at importance 1"; }

# Supervised (no unsupervised loss): one pass of the labelled rows, 5 steps.
"$TRAINER" train "$CONFIG" --overrides "${COMMON[@]}" model.losses_to_use=[] training.max_epochs=1 \
  --out "$SCRATCH/sup" >"$SCRATCH/sup.log" 2>&1 || { cat "$SCRATCH/sup.log"; fail "supervised run"; }
grep -q "labelled batches of a pass cycling" "$SCRATCH/sup.log" && fail "a supervised epoch cycles"
[[ $(epoch_steps "$SCRATCH/sup/metrics.csv") == "5 " ]] ||
  { cat "$SCRATCH/sup/metrics.csv"; fail "supervised: the epoch row is not at step 5"; }
echo "PASS: semi-supervised epochs of 10 steps on 1 and 2 ranks (5 with accumulate_grad_batches=2), supervised 5"
