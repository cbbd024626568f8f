#!/usr/bin/env bash
# Prints the frame rate of `trainer predict --video` on test_vid.mp4 of the
# mirror-mouse example (994 frames, 396x406), next to the workaround it replaces
# (decode the video to PNG files, write a label CSV without labels, `trainer import`,
# `trainer predict`), with the same checkpoint (ResNet-18, 128x128, 1 training step:
# the rate does not depend on the weights).
#
#   bash scripts/bench_predict_video.sh [BUILD_DIR]            CPU
#   bash scripts/bench_predict_video.sh [BUILD_DIR] --gpu      GPU: ResNet-50 at 256x256, batch 64, and
#                                                              PyTorch's inference rate for the same model
# The workaround needs build/tests/test_video_tool (built with the tests).
set -euo pipefail
BUILD=${1:-build}
GPU=${2:-}
REPO=$(cd "$(dirname "$0")/.." && pwd)
TRAINER=$BUILD/trainer
TOOL=$BUILD/tests/test_video_tool
PROJECT=${TRAINER_SHARED_DATA:-$REPO/../shared/data}/mirror-mouse-example
VIDEO=$PROJECT/videos/test_vid.mp4
[[ -f $VIDEO ]] || { echo "SKIPPED: $VIDEO not found (set TRAINER_SHARED_DATA)"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
now() { date +%s.%N; }

backbone=resnet18 size=128 batch=32 accel=cpu
[[ $GPU == --gpu ]] && backbone=resnet50 size=256 batch=64 accel=gpu
"$TRAINER" import --csv "$PROJECT/CollectedData.csv" --out "$WORK/mm.h5" >/dev/null
cat >"$WORK/mm.cfg" <<CFG
[data]
data_files = $WORK/mm.h5
image_resize_height = $size
image_resize_width = $size
[training]
imgaug = default
train_batch_size = 8
val_batch_size = 8
test_batch_size = $batch
max_epochs = 1
unfreezing_epoch = 0
[model]
backbone = $backbone
[distributed]
accelerator = $accel
CFG
"$TRAINER" train --config "$WORK/mm.cfg" --out "$WORK/run" --max-steps 1 >/dev/null
CKPT=$WORK/run/checkpoints/last.h5
frames=994

t0=$(now)
"$TRAINER" predict --checkpoint "$CKPT" --video "$VIDEO" --video-out "$WORK/video_preds" | tail -1
t1=$(now)
video_fps=$(awk -v n=$frames -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", n / (b - a) }')
echo "predict --video ($accel, $backbone ${size}x$size, batch $batch): $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s" \
     "wall, $video_fps frames/s (model load included)"

if [[ -x $TOOL && $GPU != --gpu ]]; then
  t0=$(now)
  "$TOOL" extract "$VIDEO" "$WORK/frames" $(sed -n 2p "$WORK/video_preds/test_vid.csv" | cut -d, -f2- | tr ',' '\n' | awk '!s[$0]++')
  "$TRAINER" import --csv "$WORK/frames/CollectedData.csv" --out "$WORK/frames.h5" >/dev/null
  "$TRAINER" predict --config "$WORK/run/config.ini" --checkpoint "$CKPT" --data.data_files "$WORK/frames.h5" \
    --out "$WORK/frames.csv" >/dev/null
  t1=$(now)
  echo "workaround (extract PNGs + import + predict): $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s wall," \
       "$(awk -v n=$frames -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", n / (b - a) }') frames/s"
fi

if [[ $GPU == --gpu ]]; then
  /usr/bin/python3 - "$REPO/scripts" "$batch" "$size" <<'PY'
import sys, time, torch
sys.path.insert(0, sys.argv[1])
from bench_gpu_torch import HeatmapModel
batch, size = int(sys.argv[2]), int(sys.argv[3])
if not torch.cuda.is_available():
    print("SKIPPED: PyTorch sees no GPU"); sys.exit(0)
model = HeatmapModel(17).cuda().eval()
x = torch.randn(batch, 3, size, size, device="cuda")
for name, ctx, mf in [("fp32", torch.no_grad, torch.contiguous_format),
                      ("bf16 channels-last", lambda: torch.autocast("cuda", dtype=torch.bfloat16), torch.channels_last)]:
    m = model.to(memory_format=mf); xi = x.to(memory_format=mf)
    with torch.no_grad(), ctx():
        for _ in range(5): m(xi)
        torch.cuda.synchronize(); t = time.time(); n = 30
        for _ in range(n): m(xi)
        torch.cuda.synchronize()
    print(f"PyTorch inference ({name}, ResNet-50 {size}x{size}, batch {batch}): {n * batch / (time.time() - t):.0f} images/s")
PY
fi
