# model.precision end to end on the CPU, where the 16-bit convolution rounding of
# the GPU path is emulated: 2 ranks train with 16-mixed (loss scaling, its state in
# the checkpoint, one warning from rank 0), resume from that checkpoint, and a
# bf16-mixed run ends with losses close to the fp32 run's.
source "$(dirname "$0")/lib/common.sh"
"$TRAINER" synth --out "$SCRATCH/small.h5" --frames 40 --size 64 --keypoints 4 --seed 2 >/dev/null || fail "synth"
cat >"$SCRATCH/small.cfg" <<CFG
[data]
data_files = $SCRATCH/small.h5
image_resize_height = 64
image_resize_width = 64
[training]
imgaug = default
train_batch_size = 8
val_batch_size = 8
max_epochs = 2
unfreezing_epoch = 0
log_every_n_steps = 2
check_val_every_n_epoch = 1
num_workers = 1
[model]
backbone = resnet18
CFG

$MPIRUN -np 2 "$TRAINER" train --config "$SCRATCH/small.cfg" --model.precision 16-mixed --out "$SCRATCH/fp16" \
  >"$SCRATCH/fp16.log" 2>&1 || { cat "$SCRATCH/fp16.log"; fail "16-mixed train"; }
warnings=$(grep -c "16-mixed on CPU" "$SCRATCH/fp16.log" || true)
[[ $warnings == 1 ]] || { cat "$SCRATCH/fp16.log"; fail "expected one CPU emulation warning, got $warnings"; }
scale=$(h5dump -a /state/loss_scale "$SCRATCH/fp16/checkpoints/last.h5" | grep -oE '\(0\): [0-9.e+]+' | cut -d' ' -f2)
[[ -n $scale ]] || fail "no /state/loss_scale in the checkpoint"
echo "16-mixed loss scale after 2 epochs: $scale"
python3 -c "import sys; s = float(sys.argv[1]); assert 1 <= s <= 65536 * 2, s" "$scale" || fail "loss scale $scale"

# Resume one more epoch from the 16-mixed checkpoint.
$MPIRUN -np 2 "$TRAINER" train --config "$SCRATCH/fp16/config.ini" --training.max_epochs 3 \
  --resume "$SCRATCH/fp16/checkpoints/last.h5" >"$SCRATCH/resume.log" 2>&1 || { cat "$SCRATCH/resume.log"; fail "resume"; }
[[ $(epoch_rows "$SCRATCH/fp16/metrics.csv" | wc -l) == 3 ]] || { cat "$SCRATCH/fp16/metrics.csv"; fail "resumed metrics.csv rows"; }

# bf16-mixed and fp32 from the same seeds: close, not equal (8-bit mantissas).
"$TRAINER" train --config "$SCRATCH/small.cfg" --model.precision bf16-mixed --training.max_epochs 1 \
  --out "$SCRATCH/bf16" >"$SCRATCH/bf16.log" 2>&1 || { cat "$SCRATCH/bf16.log"; fail "bf16-mixed train"; }
"$TRAINER" train --config "$SCRATCH/small.cfg" --training.max_epochs 1 --out "$SCRATCH/fp32" \
  >"$SCRATCH/fp32.log" 2>&1 || { cat "$SCRATCH/fp32.log"; fail "fp32 train"; }
python3 - "$SCRATCH/fp32/metrics.csv" "$SCRATCH/bf16/metrics.csv" <<'PY' || fail "bf16-mixed is far from fp32"
import csv, math, sys
a, b = ([r for r in csv.DictReader(open(p)) if r["train_loss"]][0] for p in sys.argv[1:3])
for key in ("train_loss", "val_loss"):
    x, y = float(a[key]), float(b[key])
    assert math.isfinite(y), (key, y)
    rel = abs(x - y) / abs(x)
    print(f"{key}: fp32 {x:.6g} bf16-mixed {y:.6g} (rel {rel:.1e})")
    assert x != y and rel < 0.05, (key, rel)
PY
echo "train_mixed_precision: ok"
