# Whole-model parity with PyTorch 1.13 (Debian's python3-torch): loss, every
# gradient, one Adam step and the BN statistics, plus the checkpoint's names and
# shapes against torchvision's ResNet state_dict. Reference: PyTorch in float64.
# resnet18 must match everything within 1e-4 (or PyTorch's own float32 error).
# resnet50: everything is enforced too, with a per-tensor bar tolerant of ReLU mask
# flips (--relu-flips: a few pre-activations ~1e-5 from zero change sign under
# float32 rounding, in ours and PyTorch's float32 alike; docs/MODEL.md).
# Skips visibly when torch is missing.
source "$(dirname "$0")/lib/common.sh"
PY=/usr/bin/python3
$PY -c "import torch, torchvision, h5py" 2>/dev/null || skip "torch, torchvision or h5py missing for $PY"
export_run() {  # arch size batch keypoints d
  "$TRAINER" bench step --backbone "$1" --size "$2" --batch "$3" --keypoints "$4" --downsample "$5" \
    --seed 3 --threads 2 --export "$SCRATCH/$1-d$5" || fail "export for $1"
}
export_run resnet18 64 2 3 2
$PY "$REPO/tests/parity/model_parity.py" "$SCRATCH/resnet18-d2" || fail "resnet18 differs from PyTorch"
export_run resnet18 64 2 2 3
$PY "$REPO/tests/parity/model_parity.py" "$SCRATCH/resnet18-d3" || fail "resnet18 (d = 3) differs from PyTorch"
export_run resnet50 128 4 4 2
$PY "$REPO/tests/parity/model_parity.py" "$SCRATCH/resnet50-d2" --relu-flips || fail "resnet50 differs from PyTorch"
# EfficientNet-B0/B1/B2 (lightning-pose's efficientnet_*: torchvision's `features`),
# with stochastic depth drawn in train mode: the reference applies the trainer's
# draws (batch.h5's stochastic_depth/*). B0 at initialization and from a trained
# checkpoint (20 steps of lr 1e-3 on synthetic frames), B1 and B2 from trained
# checkpoints only: at initialization their squeeze-excitation gradients are float32
# noise, and on an AVX-512 AMD EPYC (2026-11-29) B1's first block differed from float64
# by 1.5e-4 where PyTorch's float32 did by 3.3e-5, with the trainer of acfd40c too;
# from 20 trained steps it is 1.9e-4 against PyTorch's 1.9e-4.
# Gradients per tensor and the running statistics are enforced (--gradients-only:
# after one Adam step from initialization, a gradient that is rounding noise flips
# its parameter's whole step, see model_parity.py).
export_run efficientnet_b0 64 4 3 2
$PY "$REPO/tests/parity/model_parity.py" "$SCRATCH/efficientnet_b0-d2" --gradients-only || fail "efficientnet_b0 differs from PyTorch"
"$TRAINER" synth --out "$SCRATCH/frames.h5" --frames 40 --size 64 --keypoints 3 --seed 5 >/dev/null || fail "synth"
trained_run() {  # arch batch d: 20 steps of training, then one exported step from the checkpoint
  # Without augmentation: the trajectory only has to leave initialization, and a change
  # to the dlc pipeline must not move this test (with dlc, B1's bar moved from 1.0x to
  # 3.05x of PyTorch's float32 error across the day's augmentation changes).
  "$TRAINER" train --data.data_files "$SCRATCH/frames.h5" --data.image_resize_height 64 --data.image_resize_width 64 \
    --model.backbone "$1" --data.downsample_factor "$3" --training.train_batch_size 8 --training.unfreezing_epoch 0 \
    --training.imgaug none \
    --training.learning_rate 1e-3 --training.check_val_every_n_epoch 1000 --out "$SCRATCH/$1-run" --max-steps 20 \
    >"$SCRATCH/$1-train.log" 2>&1 || { cat "$SCRATCH/$1-train.log"; fail "training $1"; }
  "$TRAINER" bench step --backbone "$1" --size 64 --batch "$2" --keypoints 3 --downsample "$3" --seed 4 --threads 2 \
    --init-checkpoint "$SCRATCH/$1-run/checkpoints/last.h5" --export "$SCRATCH/$1-trained" || fail "export of $1 from the checkpoint"
  $PY "$REPO/tests/parity/model_parity.py" "$SCRATCH/$1-trained" --gradients-only || fail "$1 from a trained checkpoint differs"
}
trained_run efficientnet_b0 4 2
trained_run efficientnet_b1 2 3
trained_run efficientnet_b2 2 2
# The conversion script loads a checkpoint with strict names.
$PY "$REPO/scripts/checkpoint_to_torch.py" "$SCRATCH/resnet18-d2/after.h5" | grep -q "^loaded" || fail "checkpoint_to_torch.py"
echo "PASSED"
