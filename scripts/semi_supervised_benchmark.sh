#!/usr/bin/env bash
# Does the unsupervised PCA loss help? Trains lightning-pose's mirror-mouse example
# with the same settings and seeds, supervised only and with pca_singleview on the
# example video (test_vid.mp4) at each of LOG_WEIGHTS, then predicts the labelled frames
# with each best checkpoint and prints per split (train / validation / test) the mean
# pixel error (predictions_pixel_error.csv) and lightning-pose's PCA error metric
# (predictions_pca_singleview_error.csv, written for every run since the configs name
# the PCA keypoints). Not a timed test: a measurement for docs/TRAINING.md
# ("Semi-supervised training").
#
#   scripts/semi_supervised_benchmark.sh [TRAINER] [OUT]
#
# Environment: EPOCHS (30), SIZE (128: image_resize_dims), BACKBONE (resnet18),
# LOG_WEIGHTS (space-separated; lightning-pose's example: 10.7), SEQUENCE (unlabelled frames per step, 16),
# THREADS (OMP_NUM_THREADS, 2), NP (ranks, 1), TRAINER_SHARED_DATA (../shared/data).
# A run whose OUT/<name>/predictions_pixel_error.csv exists is kept (delete OUT to redo).
set -euo pipefail
TRAINER=${1:-build/trainer}
OUT=${2:-outputs/semi-supervised-benchmark}
REPO=$(cd "$(dirname "$0")/.." && pwd)
shared=${TRAINER_SHARED_DATA:-$REPO/../shared/data}/mirror-mouse-example
[[ -f "$shared/CollectedData.csv" && -d "$shared/videos" ]] || { echo "no mirror-mouse data at $shared" >&2; exit 77; }
export OMP_NUM_THREADS=${THREADS:-2}
mkdir -p "$OUT"
data="$OUT/mirror-mouse.h5"
[[ -f "$data" ]] || "$TRAINER" import --csv "$shared/CollectedData.csv" --out "$data" >/dev/null
launch=()
[[ ${NP:-1} == 1 ]] || launch=(mpirun --oversubscribe -np "$NP")

RUNS=(supervised)
for w in ${LOG_WEIGHTS:-${LOG_WEIGHT:-10.7}}; do RUNS+=("pca_singleview_$w"); done
for name in "${RUNS[@]}"; do
  losses=$([[ $name == supervised ]] && echo "[]" || echo "[pca_singleview]")
  log_weight=${name#pca_singleview_}
  [[ $name == supervised ]] && log_weight=10.7
  cat >"$OUT/$name.cfg" <<CFG
[data]
data_files = $data
image_resize_height = ${SIZE:-128}
image_resize_width = ${SIZE:-128}
video_dir = $shared/videos
columns_for_singleview_pca = [0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14]
[training]
imgaug = default
train_batch_size = 8
val_batch_size = 8
train_prob = 0.8
val_prob = 0.1
max_epochs = ${EPOCHS:-30}
min_epochs = 1
unfreezing_epoch = 0
check_val_every_n_epoch = 5
log_every_n_steps = 50
rng_seed_data_pt = 0
rng_seed_model_pt = 0
unlabeled_sequence_length = ${SEQUENCE:-16}
[model]
backbone = ${BACKBONE:-resnet18}
losses_to_use = $losses
[losses]
pca_singleview_log_weight = $log_weight
pca_singleview_components_to_keep = 0.99
anneal_init_val = 0
anneal_increase_factor = 0.01
anneal_final_val = 1
anneal_freeze_until_epoch = 0
[eval]
predict_vids_after_training = false
CFG
  if [[ -f $OUT/$name/predictions_pixel_error.csv ]]; then echo "$name: done before, kept"; continue; fi
  start=$(date +%s)
  "${launch[@]}" "$TRAINER" train --config "$OUT/$name.cfg" --out "$OUT/$name" >"$OUT/$name.log" 2>&1 ||
    { tail -20 "$OUT/$name.log"; exit 1; }
  echo "$name: $(( $(date +%s) - start )) s"
done

echo "mean pixel error / PCA error (px, original frames) of the best checkpoint's predictions:"
printf "%-22s %16s %16s %16s\n" run train val test
for name in "${RUNS[@]}"; do
  /usr/bin/python3 - "$OUT/$name/predictions_pixel_error.csv" "$OUT/$name/predictions_pca_singleview_error.csv" "$name" <<'PYEOF'
import csv, sys
def means(path):
    rows = list(csv.reader(open(path)))
    sums = {}
    for r in rows[1:]:
        values = [float(v) for v in r[1:-1] if v not in ("", "nan")]
        if values:
            s = sums.setdefault(r[-1], [0.0, 0])
            s[0] += sum(values); s[1] += len(values)
    return {k: v[0] / v[1] for k, v in sums.items()}
pixel, pca = means(sys.argv[1]), means(sys.argv[2])
cell = lambda k: f"{pixel.get(k, float('nan')):.2f} / {pca.get(k, float('nan')):.2f}"
print(f"{sys.argv[3]:<22} {cell('train'):>16} {cell('validation'):>16} {cell('test'):>16}")
PYEOF
done
