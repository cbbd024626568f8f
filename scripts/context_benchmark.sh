#!/usr/bin/env bash
# heatmap_mhcrnn vs heatmap on the mirror-mouse example (a benchmark, not a timed test):
# lightning-pose's example config (inputs/mirror-mouse.yaml), supervised only, trained
# with each model type and each data seed (split and shuffling), everything else
# equal; prints each run's mean pixel error per split from predictions_pixel_error.csv
# and the mean over seeds.
#
#   scripts/context_benchmark.sh [TRAINER] [OUT]
#
# Environment: SEEDS (training.rng_seed_data_pt values, default "0 1 2"), EPOCHS
# (default 20), BACKBONE (default resnet18), SIZE (square resize, default 128), BATCH
# (default 8), JOBS (runs at once, each with THREADS OpenMP threads; default 2 and 1).
# Record results in docs/TRAINING.md.
set -euo pipefail
TRAINER=${1:-build/trainer}
OUT=${2:-outputs/context-benchmark}
REPO=$(cd "$(dirname "$0")/.." && pwd)
shared=${TRAINER_SHARED_DATA:-$REPO/../shared/data}/mirror-mouse-example
[[ -f "$shared/CollectedData.csv" ]] || { echo "no mirror-mouse data at $shared" >&2; exit 77; }
SEEDS=${SEEDS:-0 1 2}
EPOCHS=${EPOCHS:-20}
SIZE=${SIZE:-128}
JOBS=${JOBS:-2}
export OMP_NUM_THREADS=${THREADS:-1}
mkdir -p "$OUT"
# Import once, so that concurrent runs do not each import the CSV.
data="$OUT/mirror-mouse.h5"
[[ -f "$data" ]] || "$TRAINER" import --csv "$shared/CollectedData.csv" --out "$data" >/dev/null

run() {  # model_type seed
  local dir="$OUT/$1-seed$2"
  [[ -f "$dir/predictions_pixel_error.csv" ]] && return 0
  "$TRAINER" train --config "$REPO/inputs/mirror-mouse.yaml" --out "$dir" --overrides \
      model.model_type=$1 training.rng_seed_data_pt=$2 model.losses_to_use=[] \
      "model.backbone=${BACKBONE:-resnet18}" "data.data_dir=$shared" data.csv_file=null "data.data_files=$(realpath "$data")" \
      data.image_resize_dims.height=$SIZE data.image_resize_dims.width=$SIZE \
      training.train_batch_size=${BATCH:-8} training.max_epochs=$EPOCHS training.min_epochs=1 \
      training.unfreezing_epoch=0 training.check_val_every_n_epoch=1 \
      training.lr_scheduler_params.multisteplr.milestones=[$((EPOCHS * 3 / 5)),$((EPOCHS * 4 / 5))] \
      training.log_every_n_steps=10 eval.predict_vids_after_training=false \
      eval.save_vids_after_training=false >"$dir.log" 2>&1 \
    || { echo "$1 seed $2: training failed, see $dir.log" >&2; tail -3 "$dir.log" >&2; return 1; }
}

start=$(date +%s)
pids=()
for seed in $SEEDS; do
  for model in heatmap heatmap_mhcrnn; do
    run "$model" "$seed" &
    pids+=($!)
    while (( $(jobs -rp | wc -l) >= JOBS )); do wait -n || true; done
  done
done
for pid in "${pids[@]}"; do wait "$pid" || { echo "a run failed" >&2; exit 1; }; done
echo "trained in $(( $(date +%s) - start )) s (${BACKBONE:-resnet18}, ${SIZE}x${SIZE}, $EPOCHS epochs, seeds $SEEDS)"

/usr/bin/python3 - "$OUT" $SEEDS <<'PY'
import sys
import pandas as pd
out, seeds = sys.argv[1], sys.argv[2:]
for model in ("heatmap", "heatmap_mhcrnn"):
    means = {s: [] for s in ("train", "validation", "test")}
    for seed in seeds:
        err = pd.read_csv(f"{out}/{model}-seed{seed}/predictions_pixel_error.csv", index_col=0)
        row = []
        for split in means:
            value = err[err["set"] == split].drop(columns="set").stack().mean()
            means[split].append(value)
            row.append(f"{split} {value:6.2f}")
        print(f"{model:15s} seed {seed}: " + "  ".join(row) + " px")
    print(f"{model:15s} mean:   " + "  ".join(f"{s} {sum(v) / len(v):6.2f}" for s, v in means.items()) + " px")
PY
