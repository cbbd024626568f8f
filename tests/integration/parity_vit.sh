# ViT backbone (vits_dino) parity with PyTorch 1.13 from a given state: the test
# writes a safetensors file under Hugging Face's key names, the trainer starts from it
# (bench step --init-weights) and exports one step; tests/parity/vit_parity.py
# rebuilds the step in plain PyTorch mirroring transformers' ViTModel (loading the
# same file) and compares the loaded weights, the loss, every gradient and the Adam
# step per tensor. 64x64 resizes the 14x14 position grid down to 4x4, 256x256 up to
# 16x16 (d = 1: two deconvolutions). Skips visibly when torch is missing.
source "$(dirname "$0")/lib/common.sh"
PY=/usr/bin/python3
$PY -c "import torch, h5py" 2>/dev/null || skip "torch or h5py missing for $PY"
WEIGHTS="$SCRATCH/model.safetensors"
$PY "$REPO/tests/parity/vit_parity.py" write "$WEIGHTS" || fail "writing the weights"
export_run() {  # size batch keypoints d
  "$TRAINER" bench step --backbone vits_dino --size "$1" --batch "$2" --keypoints "$3" --downsample "$4" \
    --seed 3 --threads 2 --init-weights "$WEIGHTS" --export "$SCRATCH/vit-$1-d$4" || fail "export at $1"
  $PY "$REPO/tests/parity/vit_parity.py" check "$SCRATCH/vit-$1-d$4" "$WEIGHTS" || fail "vits_dino at $1 differs from PyTorch"
}
export_run 64 2 3 2
export_run 256 1 2 1
# A downsample factor that leaves the stride-16 head no layer is the user's to fix.
expect_fail 2 "^error: data.downsample_factor = 3 leaves no upsampling layer" \
  "$TRAINER" bench step --backbone vits_dino --size 64 --batch 1 --keypoints 2 --downsample 3
echo "PASSED"
