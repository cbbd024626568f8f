#!/usr/bin/env bash
# Learning from pretrained weights vs from scratch (a benchmark, not a timed test).
# Trains lightning-pose's mirror-mouse example config (inputs/mirror-mouse.yaml: ResNet-50,
# 256x256, imgaug dlc, supervised only) twice with the same split, seeds and settings,
# once from random weights and once from a torchvision ResNet-50 file
# (model.backbone_weights), and prints each run's mean test pixel error from its
# predictions_pixel_error.csv.
#
#   scripts/pretrained_benchmark.sh [WEIGHTS.pth] [TRAINER] [OUT]
#
# WEIGHTS: torchvision's resnet50-11ad3fa6.pth (docs/MODEL.md has the URL). Without it,
# a planted file stands in: the scratch run's backbone, written by python3-torch in
# torchvision's own format (torch.save of a resnet50 state_dict, fc included). That
# backbone has seen the training frames only (never the test frames), so the comparison
# checks that pretrained features reach the network through the real file format and
# fine-tuning; it says nothing about ImageNet features themselves.
# Environment: EPOCHS (default 25), THREADS (OMP_NUM_THREADS, default 2), UNFREEZE
# (training.unfreezing_epoch of the pretrained run, default 0 = the same schedule as the
# scratch run). Record results in docs/TRAINING.md.
set -euo pipefail
WEIGHTS=${1:-}
TRAINER=${2:-build/trainer}
OUT=${3:-outputs/pretrained-benchmark}
REPO=$(cd "$(dirname "$0")/.." && pwd)
shared=${TRAINER_SHARED_DATA:-$REPO/../shared/data}/mirror-mouse-example
[[ -f "$shared/CollectedData.csv" ]] || { echo "no mirror-mouse data at $shared" >&2; exit 77; }
export OMP_NUM_THREADS=${THREADS:-2}
EPOCHS=${EPOCHS:-25}
mkdir -p "$OUT"

common=(model.losses_to_use=[] model.backbone=resnet50 "data.data_dir=$shared"
        training.max_epochs=$EPOCHS training.min_epochs=1 training.check_val_every_n_epoch=5
        training.lr_scheduler_params.multisteplr.milestones=[$((EPOCHS * 3 / 5)),$((EPOCHS * 4 / 5))]
        training.log_every_n_steps=10 eval.predict_vids_after_training=false
        eval.save_vids_after_training=false)

train() {  # name, extra overrides...
  local name=$1; shift
  local start; start=$(date +%s)
  "$TRAINER" train --config "$REPO/inputs/mirror-mouse.yaml" --out "$OUT/$name" \
      --overrides "${common[@]}" "$@" >"$OUT/$name.log" 2>&1 \
    || { echo "$name: training failed, see $OUT/$name.log" >&2; tail -5 "$OUT/$name.log" >&2; exit 1; }
  echo "$name: $(( $(date +%s) - start )) s; $(grep -E "^(model|weights|warning)" "$OUT/$name.log" | head -3 | tr '\n' ' ')"
}

test_error() {  # run folder -> "mean test pixel error over N frames"
  /usr/bin/python3 - "$1/predictions_pixel_error.csv" <<'PY'
import sys
import pandas as pd
err = pd.read_csv(sys.argv[1], index_col=0)
for split in ("train", "validation", "test"):
    rows = err[err["set"] == split].drop(columns="set")
    print(f"  {split}: {rows.stack().mean():.2f} px over {len(rows)} frames")
PY
}

[[ -f "$OUT/scratch/predictions_pixel_error.csv" ]] || train scratch training.unfreezing_epoch=0
if [[ -z "$WEIGHTS" ]]; then
  WEIGHTS="$OUT/planted-resnet50.pth"
  /usr/bin/python3 - "$OUT/scratch/checkpoints/last.h5" "$WEIGHTS" <<'PY'
import sys
import h5py
import numpy as np
import torch
import torchvision
net = torchvision.models.resnet50()
state = net.state_dict()
with h5py.File(sys.argv[1], "r") as f:
    for name in f["model"]:
        if name.startswith("backbone."):
            key = name[len("backbone."):]
            state[key] = torch.from_numpy(np.array(f["model"][name][()])).reshape(state[key].shape)
net.load_state_dict(state, strict=True)
torch.save(net.state_dict(), sys.argv[2])
print(f"planted {sys.argv[2]}: the scratch run's backbone in torchvision's resnet50 format")
PY
fi
[[ -f "$OUT/pretrained/predictions_pixel_error.csv" ]] \
  || train pretrained "model.backbone_weights=$(realpath "$WEIGHTS")" training.unfreezing_epoch=${UNFREEZE:-0}

echo "from scratch ($EPOCHS epochs):"
test_error "$OUT/scratch"
echo "from $(basename "$WEIGHTS") ($EPOCHS epochs):"
test_error "$OUT/pretrained"
