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
# The conversion script loads a checkpoint with strict names.
$PY "$REPO/scripts/checkpoint_to_torch.py" "$SCRATCH/resnet18-d2/after.h5" | grep -q "^loaded" || fail "checkpoint_to_torch.py"
echo "PASSED"
