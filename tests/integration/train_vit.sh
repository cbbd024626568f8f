# lightning-pose's mirror-mouse example config trains with model.backbone=vits_dino on
# 2 ranks (a few semi-supervised steps at 256x256: pca_singleview and temporal on the
# example video), its pretrained weights found the way transformers
# caches them (HF_HOME/hub/models--facebook--dino-vits16/snapshots/<rev>/model.safetensors,
# written here by tests/parity/vit_parity.py with Hugging Face's key names), and the run
# writes lightning-pose's model directory (.ckpt names: backbone.vision_encoder.*, read back
# with torch.load).
# A model.backbone_weights folder without the file names the model id and the file.
source "$(dirname "$0")/lib/common.sh"
DATA="$(shared_data)/mirror-mouse-example"
[[ -f $DATA/CollectedData.csv ]] || skip "$DATA/CollectedData.csv not found (set TRAINER_SHARED_DATA)"
DATA="$(cd "$DATA" && pwd)"
PY=/usr/bin/python3
$PY -c "import torch" 2>/dev/null || skip "torch missing for $PY (it writes the test's ViT weights)"
SNAPSHOT="$SCRATCH/hf/hub/models--facebook--dino-vits16/snapshots/0123456789abcdef"
mkdir -p "$SNAPSHOT"
$PY "$REPO/tests/parity/vit_parity.py" write "$SNAPSHOT/model.safetensors" >/dev/null || fail "writing the weights"
CONFIG="$REPO/tests/data/lightning-pose-configs/config_mirror-mouse-example.yaml"
# With its unsupervised losses on the example video, the backbone trained from the start.
OVERRIDES=(data.data_dir="$DATA" "model.losses_to_use=[pca_singleview,temporal]" model.backbone=vits_dino
           training.max_epochs=1 training.max_steps=2 training.train_batch_size=4 training.val_batch_size=4
           training.test_batch_size=4 training.unfreezing_epoch=0 eval.predict_vids_after_training=false)

HF_HOME="$SCRATCH/hf" timeout 900 $MPIRUN -np 2 -x HF_HOME "$TRAINER" train "$CONFIG" --overrides "${OVERRIDES[@]}" \
  --out "$SCRATCH/runs/a" >"$SCRATCH/a.txt" 2>&1 || { cat "$SCRATCH/a.txt"; fail "training vits_dino failed"; }
cat "$SCRATCH/a.txt"
grep -q "backbone: loaded 198 tensors from .*models--facebook--dino-vits16/snapshots/0123456789abcdef/model.safetensors" \
  "$SCRATCH/a.txt" || fail "the weights were not found in the Hugging Face cache"
grep -q "done:" "$SCRATCH/a.txt" || fail "the run did not finish"
grep -q "^unsupervised losses: pca_singleview, temporal" "$SCRATCH/a.txt" || fail "no unsupervised losses"
grep -q "could not write the lightning-pose checkpoint" "$SCRATCH/a.txt" && fail "no lightning-pose checkpoint"
CKPT=$(ls "$SCRATCH"/runs/a/tb_logs/*/version_0/checkpoints/*-best.ckpt) || fail "no lightning-pose .ckpt"
$PY - "$CKPT" <<'PYEOF' || fail "the .ckpt does not hold the ViT under lightning-pose's names"
import sys, torch
state = torch.load(sys.argv[1], map_location="cpu")["state_dict"]
names = [n for n in state if n.startswith("backbone.")]
assert len(names) == 198 and all(n.startswith("backbone.vision_encoder.") for n in names), names[:3]
assert tuple(state["backbone.vision_encoder.embeddings.position_embeddings"].shape) == (1, 197, 384)
assert "head.upsampling_layers.1.weight" in state
print("ckpt: 198 backbone.vision_encoder.* tensors and the head")
PYEOF

# The run folder as --init-weights of a new ViT run: its checkpoint, not a Hugging Face
# cache to search (as for the ResNets). At 128x96, which lightning-pose refuses for a
# ViT: a warning says its model folder will not load there.
"$TRAINER" train "$CONFIG" --overrides "${OVERRIDES[@]}" "model.losses_to_use=[]" training.max_steps=1 \
  data.image_resize_dims.height=128 data.image_resize_dims.width=96 \
  --init-weights "$SCRATCH/runs/a" --out "$SCRATCH/runs/c" >"$SCRATCH/c.txt" 2>&1 ||
  { cat "$SCRATCH/c.txt"; fail "--init-weights of a vits_dino run folder"; }
grep -q "backbone: loaded 198 tensors from $SCRATCH/runs/a/checkpoints/\(best\|last\).h5" "$SCRATCH/c.txt" ||
  { cat "$SCRATCH/c.txt"; fail "the run folder's checkpoint was not loaded"; }
grep -q "^warning: data.image_resize_dims 128x96 with vits_dino: lightning-pose refuses ViT models" "$SCRATCH/c.txt" ||
  { cat "$SCRATCH/c.txt"; fail "no warning for a non-square ViT"; }
# A folder that holds no file for the model: one error naming the id and the file, exit 2.
mkdir -p "$SCRATCH/empty"
expect_fail 2 "^error: model.backbone_weights: '.*empty' holds no model.safetensors of facebook/dino-vits16" \
  "$TRAINER" train "$CONFIG" --overrides "${OVERRIDES[@]}" model.backbone_weights="$SCRATCH/empty" --out "$SCRATCH/runs/b"
grep -q "^hint: download https://huggingface.co/facebook/dino-vits16/resolve/main/model.safetensors" "$SCRATCH/err.txt" \
  || fail "the hint does not give the file's URL"
echo "PASSED"
