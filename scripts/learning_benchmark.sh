#!/usr/bin/env bash
# Learning, for real (not a timed test): trains from scratch on CPU and prints the
# validation RMSE (pixels of the original frame) per validation check.
#
#   scripts/learning_benchmark.sh synthetic [TRAINER] [OUT]   # synthetic 128x128, resnet18
#   scripts/learning_benchmark.sh mirror    [TRAINER] [OUT]   # mirror-mouse example (../shared)
#
# Environment: EPOCHS (default 30 synthetic / 40 mirror), THREADS (OMP_NUM_THREADS, default 2),
# BACKBONE (default resnet18), LOSSES (mirror: model.losses_to_use, default [] = supervised;
# e.g. LOSSES=[pca_singleview] trains on the example video too). Results go to OUT/metrics.csv; record them in
# docs/PERFORMANCE.md ("Learning").
set -euo pipefail
what=${1:-synthetic}
TRAINER=${2:-build/trainer}
REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=${3:-outputs/learning-$what}
export OMP_NUM_THREADS=${THREADS:-2}
BACKBONE=${BACKBONE:-resnet18}
mkdir -p "$OUT"
case "$what" in
  synthetic)
    data="$OUT/synthetic-128.h5"
    [[ -f "$data" ]] || "$TRAINER" synth --out "$data" --frames 400 --size 128 --keypoints 9 --seed 0
    cat >"$OUT/bench.cfg" <<CFG
[data]
data_files = $data
image_resize_height = 128
image_resize_width = 128
[training]
imgaug = dlc
train_batch_size = 16
val_batch_size = 16
max_epochs = ${EPOCHS:-30}
train_prob = 0.8
val_prob = 0.1
unfreezing_epoch = 0
lr_scheduler_milestones = [20, 26]
lr_scheduler_gamma = 0.5
check_val_every_n_epoch = 2
early_stop_patience = 100
log_every_n_steps = 10
[model]
backbone = $BACKBONE
CFG
    ;;
  mirror)
    shared=${TRAINER_SHARED_DATA:-$REPO/../shared/data}/mirror-mouse-example
    [[ -f "$shared/CollectedData.csv" ]] || { echo "no mirror-mouse data at $shared" >&2; exit 77; }
    data="$OUT/mirror-mouse.h5"
    [[ -f "$data" ]] || "$TRAINER" import --csv "$shared/CollectedData.csv" --out "$data"
    sed -e "s|^data_files = .*|data_files = $data|" -e "s|^max_epochs = .*|max_epochs = ${EPOCHS:-40}|" \
        -e "s|^min_epochs = .*|min_epochs = 1|" -e "s|^unfreezing_epoch = .*|unfreezing_epoch = 0|" \
        -e "s|^check_val_every_n_epoch = .*|check_val_every_n_epoch = 2|" -e "s|^backbone = .*|backbone = $BACKBONE|" \
        -e "s|^log_every_n_steps = .*|log_every_n_steps = 10|" \
        -e "s|^video_dir = .*|video_dir = $shared/videos|" \
        -e "s|^losses_to_use = .*|losses_to_use = ${LOSSES:-[]}|" \
        "$REPO/inputs/mirror-mouse.cfg" >"$OUT/bench.cfg"
    ;;
  *) echo "usage: $0 synthetic|mirror [TRAINER] [OUT]" >&2; exit 2 ;;
esac
start=$(date +%s)
"$TRAINER" train --config "$OUT/bench.cfg" --out "$OUT/run" | tee "$OUT/train.log" | grep --line-buffered -E "validation|done|model:"
echo "wall time: $(( $(date +%s) - start )) s; metrics: $OUT/run/metrics.csv"
echo "epoch,val_rmse_px:"
awk -F, 'NR > 1 && $5 != "" { print "  " $1 ", " $5 }' "$OUT/run/metrics.csv"
