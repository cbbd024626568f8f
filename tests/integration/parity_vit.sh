# ViT backbone (vits_dino, vits_dinov2, vits_dinov3, vitb_imagenet) parity with PyTorch 1.13 from a given state: the test
# writes a safetensors file under Hugging Face's key names, the trainer starts from it
# (bench step --init-weights) and exports one step; tests/parity/vit_parity.py
# rebuilds the step in plain PyTorch mirroring transformers' ViTModel (loading the
# same file) and compares the loaded weights, the loss, every gradient and the Adam
# step per tensor. 64x64 resizes the 14x14 position grid down to 4x4, 256x256 up to
# 16x16 (d = 1: two deconvolutions); DINOv2's 37x37 grid goes down to both, and its
# 14x14 patch kernels are resized to 16x16 at load as lightning-pose does; DINOv3
# (CLS + 4 registers, RoPE on 4x4 and 16x16 patch grids) has no position table to
# resize; it trains with its RoPE coordinates rescaled by the factor the step drew
# (batch.h5's rope_rescale), which the reference applies too. Skips visibly when
# torch is missing.
source "$(dirname "$0")/lib/common.sh"
PY=/usr/bin/python3
$PY -c "import torch, h5py" 2>/dev/null || skip "torch or h5py missing for $PY"
$PY "$REPO/tests/parity/vit_parity.py" write "$SCRATCH/dino.safetensors" || fail "writing the weights"
$PY "$REPO/tests/parity/vit_parity.py" write "$SCRATCH/dinov2.safetensors" dinov2 || fail "writing the weights"
$PY "$REPO/tests/parity/vit_parity.py" write "$SCRATCH/dinov3.safetensors" dinov3 || fail "writing the weights"
$PY "$REPO/tests/parity/vit_parity.py" write "$SCRATCH/mae.safetensors" mae || fail "writing the weights"
export_run() {  # backbone weights size batch keypoints d
  local out="$SCRATCH/$1-$3-d$6"
  "$TRAINER" bench step --backbone "$1" --size "$3" --batch "$4" --keypoints "$5" --downsample "$6" \
    --seed 3 --threads 2 --init-weights "$SCRATCH/$2" --export "$out" || fail "export of $1 at $3"
  $PY "$REPO/tests/parity/vit_parity.py" check "$out" "$SCRATCH/$2" || fail "$1 at $3 differs from PyTorch"
  rm -rf "$out"  # the step's HDF5 exports, hundreds of MB each (the disk is shared)
}
export_run vits_dino dino.safetensors 64 2 3 2
export_run vits_dino dino.safetensors 256 1 2 1
export_run vits_dinov2 dinov2.safetensors 64 2 3 2
export_run vits_dinov2 dinov2.safetensors 256 1 2 1
export_run vits_dinov3 dinov3.safetensors 64 2 3 2
export_run vits_dinov3 dinov3.safetensors 256 1 2 1
# vitb_imagenet: MAE's file layout (encoder under vit., a decoder to ignore), ViT-B.
export_run vitb_imagenet mae.safetensors 64 2 3 2
# A downsample factor that leaves the stride-16 head no layer is the user's to fix.
expect_fail 2 "^error: data.downsample_factor = 3 leaves no upsampling layer" \
  "$TRAINER" bench step --backbone vits_dino --size 64 --batch 1 --keypoints 2 --downsample 3
echo "PASSED"
