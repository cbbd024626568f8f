# The context model (model_type heatmap_mhcrnn) end to end on video-like synthetic
# data: train a few steps on 1 rank and on 2 ranks (mpirun), checkpoint names of
# both head branches, `trainer predict` on the context checkpoint, the same with a
# ViT backbone (stride 16: lightning-pose's upsampling_factor 1, no W_pre), and the
# user error for data without video frames.
source "$(dirname "$0")/lib/common.sh"
"$TRAINER" synth --out "$SCRATCH/video.h5" --frames 40 --size 64 --keypoints 3 --videos 2 --seed 1 >/dev/null \
  || fail "synth --videos"
"$TRAINER" synth --out "$SCRATCH/still.h5" --frames 20 --size 64 --keypoints 3 --seed 1 >/dev/null || fail "synth"
write_cfg() {  # write_cfg FILE DATA
  cat >"$1" <<CFG
[data]
data_files = $2
image_resize_height = 64
image_resize_width = 64
[training]
imgaug = default
train_batch_size = 4
val_batch_size = 4
test_batch_size = 4
max_epochs = 2
train_prob = 0.8
val_prob = 0.1
unfreezing_epoch = 0
log_every_n_steps = 1
check_val_every_n_epoch = 1
num_workers = 1
[model]
backbone = resnet18
model_type = heatmap_mhcrnn
CFG
}
write_cfg "$SCRATCH/video.cfg" "$SCRATCH/video.h5"
write_cfg "$SCRATCH/still.cfg" "$SCRATCH/still.h5"

# 1 rank.
"$TRAINER" train --config "$SCRATCH/video.cfg" --out "$SCRATCH/run" --max-steps 3 >"$SCRATCH/train.log" 2>&1 \
  || { cat "$SCRATCH/train.log"; fail "train heatmap_mhcrnn"; }
grep -q "resnet18 heatmap_mhcrnn" "$SCRATCH/train.log" || { cat "$SCRATCH/train.log"; fail "model line"; }
grep -q "done: 0 epochs, 3 steps" "$SCRATCH/train.log" || { cat "$SCRATCH/train.log"; fail "3 steps"; }
grep -E "step [0-9]+ .*loss" "$SCRATCH/train.log" | grep -qiE "loss (nan|inf)" && fail "loss is not finite"
ckpt="$SCRATCH/run/checkpoints/last.h5"
[[ -s $ckpt ]] || fail "no checkpoints/last.h5"
for name in head.head_sf.deconv0.weight head.head_mf.W_pre.weight head.head_mf.H_f.0.weight head.head_mf.H_b.1.bias \
            backbone.layer4.1.bn2.running_var; do
  h5ls "$ckpt/model" | grep -q "^$name " || { h5ls "$ckpt/model" | head -50; fail "checkpoint lacks $name"; }
done

# predict: one row per frame (context frames are taken from each frame's video).
"$TRAINER" predict --checkpoint "$ckpt" >"$SCRATCH/predict.log" 2>&1 || { cat "$SCRATCH/predict.log"; fail "predict"; }
csv="$SCRATCH/run/predictions.csv"
[[ $(wc -l <"$csv") == 43 ]] || fail "predictions.csv: expected 3 header rows + 40 frames, got $(wc -l <"$csv")"
tail -n +4 "$csv" | grep -qiE 'nan|inf' && fail "predictions are not finite"
[[ $(tail -n +4 "$csv" | grep -cE ',(train|validation|test|unused)$') == 40 ]] || fail "set column"

# 2 ranks (data-parallel, gloo).
if command -v mpirun >/dev/null; then
  timeout 600 $MPIRUN -np 2 "$TRAINER" train --config "$SCRATCH/video.cfg" --out "$SCRATCH/run2" --backend gloo \
    --max-steps 2 >"$SCRATCH/train2.log" 2>&1 || { cat "$SCRATCH/train2.log"; fail "mpirun -np 2 train heatmap_mhcrnn"; }
  grep -q "done: .* 2 steps" "$SCRATCH/train2.log" || { cat "$SCRATCH/train2.log"; fail "2 ranks: 2 steps"; }
  grep -q "gradient all-reduce (gloo, 2 ranks" "$SCRATCH/train2.log" || { cat "$SCRATCH/train2.log"; fail "2 ranks: no all-reduce"; }
  [[ -s $SCRATCH/run2/checkpoints/last.h5 ]] || fail "2 ranks: no checkpoint"
else
  echo "note: mpirun missing, 2-rank context training not tested"
fi

# A ViT backbone (random weights): the context head without W_pre, trained and predicted.
sed 's/^backbone = resnet18$/backbone = vits_dino/' "$SCRATCH/video.cfg" > "$SCRATCH/vit.cfg"
"$TRAINER" train --config "$SCRATCH/vit.cfg" --out "$SCRATCH/run_vit" --max-steps 2 >"$SCRATCH/train_vit.log" 2>&1 \
  || { cat "$SCRATCH/train_vit.log"; fail "train heatmap_mhcrnn with vits_dino"; }
grep -q "vits_dino heatmap_mhcrnn" "$SCRATCH/train_vit.log" || { cat "$SCRATCH/train_vit.log"; fail "ViT model line"; }
grep -q "done: 0 epochs, 2 steps" "$SCRATCH/train_vit.log" || { cat "$SCRATCH/train_vit.log"; fail "ViT: 2 steps"; }
vit_ckpt="$SCRATCH/run_vit/checkpoints/last.h5"
h5ls "$vit_ckpt/model" | grep -q "^head.head_mf.W_f.weight " || fail "ViT checkpoint lacks head.head_mf.W_f.weight"
h5ls "$vit_ckpt/model" | grep -q "^head.head_mf.W_pre" && fail "ViT context head has a W_pre"
"$TRAINER" predict --checkpoint "$vit_ckpt" >"$SCRATCH/predict_vit.log" 2>&1 || { cat "$SCRATCH/predict_vit.log"; fail "ViT predict"; }
[[ $(wc -l <"$SCRATCH/run_vit/predictions.csv") == 43 ]] || fail "ViT predictions.csv rows"
tail -n +4 "$SCRATCH/run_vit/predictions.csv" | grep -qiE 'nan|inf' && fail "ViT predictions are not finite"

# Data without video frames is a user error.
expect_fail 2 "needs context frames" "$TRAINER" train --config "$SCRATCH/still.cfg" --out "$SCRATCH/r3" --max-steps 1
echo "PASSED"
