#!/usr/bin/env bash
# Per-epoch overhead of `trainer train` on this machine's CPU: trains a small
# synthetic set for EPOCHS epochs and prints, from metrics.csv, each epoch's time in
# its steps, in validation, and everything else (loader start, loss reads, metrics,
# checkpoint snapshot), with the mean and worst overhead. The goal: overhead <= 5 ms.
#
#   bash scripts/bench_epoch_overhead.sh [TRAINER] [EPOCHS] [RANKS]
set -euo pipefail
cd "$(dirname "$0")/.."
TRAINER=${1:-build/trainer}
EPOCHS=${2:-20}
RANKS=${3:-1}
OUT=$(mktemp -d /tmp/trainer-epoch-bench.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
[[ $(id -u) == 0 ]] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$TRAINER" synth --out "$OUT/data.h5" --frames 48 --size 64 --keypoints 4 --seed 1 >/dev/null
cat >"$OUT/bench.cfg" <<CFG
[data]
data_files = $OUT/data.h5
image_resize_height = 64
image_resize_width = 64
[training]
imgaug = dlc
train_batch_size = 8
val_batch_size = 8
max_epochs = $EPOCHS
unfreezing_epoch = 0
log_every_n_steps = 5
check_val_every_n_epoch = 5
num_workers = 1
[model]
backbone = resnet18
CFG
mpirun --oversubscribe -np "$RANKS" "$TRAINER" train --config "$OUT/bench.cfg" --out "$OUT/run" >"$OUT/train.log" 2>&1 ||
  { cat "$OUT/train.log"; exit 1; }
echo "trainer $("$TRAINER" --version | head -n 1); $RANKS rank(s), ResNet-18 64x64, 5 steps per epoch, $(nproc) cores"
awk -F, '
  NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
  $col["train_loss"] != "" {
    e = $col["epoch"]; s = $col["epoch_steps_s"]; v = $col["epoch_val_s"]; o = $col["epoch_overhead_s"]
    printf "epoch %3d  steps %7.1f ms  validation %6.1f ms  overhead %6.2f ms\n", e, 1000 * s, 1000 * v, 1000 * o
    n++; sum += o; if (o > worst) worst = o
  }
  END { printf "overhead per epoch: mean %.2f ms, worst %.2f ms over %d epochs\n", 1000 * sum / n, 1000 * worst, n }
' "$OUT/run/metrics.csv"
