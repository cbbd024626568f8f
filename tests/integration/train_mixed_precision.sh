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
# The run's last lines say the scale the checkpoint holds and how many steps were skipped.
summary=$(grep -E "16-mixed: loss scale [0-9.e+]+ at the end; [0-9]+ step\(s\) of this run skipped" "$SCRATCH/fp16.log") ||
  { cat "$SCRATCH/fp16.log"; fail "no 16-mixed summary line"; }
python3 -c "import sys; assert float(sys.argv[1].split()[3]) == float(sys.argv[2]), sys.argv[1:]" "$summary" "$scale" ||
  fail "the summary's scale ($summary) is not the checkpoint's ($scale)"

# Resume one more epoch from the 16-mixed checkpoint.
$MPIRUN -np 2 "$TRAINER" train --config "$SCRATCH/fp16/config.ini" --training.max_epochs 3 \
  --resume "$SCRATCH/fp16/checkpoints/last.h5" >"$SCRATCH/resume.log" 2>&1 || { cat "$SCRATCH/resume.log"; fail "resume"; }
[[ $(epoch_rows "$SCRATCH/fp16/metrics.csv" | wc -l) == 3 ]] || { cat "$SCRATCH/fp16/metrics.csv"; fail "resumed metrics.csv rows"; }

# bf16-mixed and fp32 from the same seeds: close, not equal (8-bit mantissas).
"$TRAINER" train --config "$SCRATCH/small.cfg" --model.precision bf16-mixed --training.max_epochs 1 \
  --out "$SCRATCH/bf16" >"$SCRATCH/bf16.log" 2>&1 || { cat "$SCRATCH/bf16.log"; fail "bf16-mixed train"; }
# (model.cuda_graphs, on by default, is GPU-only: CPUs ignore it without a word.)
"$TRAINER" train --config "$SCRATCH/small.cfg" --training.max_epochs 1 --out "$SCRATCH/fp32" --model.cuda_graphs true \
  >"$SCRATCH/fp32.log" 2>&1 || { cat "$SCRATCH/fp32.log"; fail "fp32 train"; }
if grep -q "cuda_graphs" "$SCRATCH/fp32.log"; then cat "$SCRATCH/fp32.log"; fail "model.cuda_graphs on the CPU: expected no line"; fi
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

# TRAINER_NHWC16=1: the backbone's 16-bit NHWC activations (the GPU default),
# emulated here: close to fp32, and not the fp32-activation bf16 run's numbers.
TRAINER_NHWC16=1 "$TRAINER" train --config "$SCRATCH/small.cfg" --model.precision bf16-mixed --training.max_epochs 1 \
  --out "$SCRATCH/bf16_nhwc" >"$SCRATCH/bf16_nhwc.log" 2>&1 || { cat "$SCRATCH/bf16_nhwc.log"; fail "bf16 NHWC train"; }
python3 - "$SCRATCH/fp32/metrics.csv" "$SCRATCH/bf16_nhwc/metrics.csv" "$SCRATCH/bf16/metrics.csv" <<'PY' || fail "16-bit activations"
import csv, math, sys
a, b, c = ([r for r in csv.DictReader(open(p)) if r["train_loss"]][0] for p in sys.argv[1:4])
for key in ("train_loss", "val_loss"):
    x, y, z = float(a[key]), float(b[key]), float(c[key])
    rel = abs(x - y) / abs(x)
    print(f"{key}: fp32 {x:.6g} bf16 + 16-bit activations {y:.6g} (rel {rel:.1e}); bf16 {z:.6g}")
    assert math.isfinite(y) and rel < 0.05, (key, rel)
PY
grep -q "bf16-mixed with 16-bit NHWC activations emulated" "$SCRATCH/bf16_nhwc.log" || { cat "$SCRATCH/bf16_nhwc.log"; fail "TRAINER_NHWC16=1 not in effect"; }
grep -q "16-bit NHWC activations" "$SCRATCH/bf16.log" && fail "16-bit activations without TRAINER_NHWC16 on the CPU"
cmp -s "$SCRATCH/bf16_nhwc/predictions.csv" "$SCRATCH/bf16/predictions.csv" && fail "TRAINER_NHWC16=1 changed no prediction"
expect_fail 2 "^error: TRAINER_NHWC16 must be 0 or 1" env TRAINER_NHWC16=2 "$TRAINER" train --config "$SCRATCH/small.cfg" \
  --model.precision bf16-mixed --out "$SCRATCH/bad"

# predict --precision (litpose predict's names): bf16 keypoints close to fp32's.
"$TRAINER" predict --checkpoint "$SCRATCH/fp32/checkpoints/last.h5" --out "$SCRATCH/p32.csv" \
  >"$SCRATCH/p32.log" 2>&1 || { cat "$SCRATCH/p32.log"; fail "predict fp32"; }
"$TRAINER" predict --checkpoint "$SCRATCH/fp32/checkpoints/last.h5" --precision bf16 --out "$SCRATCH/p16.csv" \
  >"$SCRATCH/p16.log" 2>&1 || { cat "$SCRATCH/p16.log"; fail "predict bf16"; }
python3 - "$SCRATCH/p32.csv" "$SCRATCH/p16.csv" <<'PY' || fail "predict --precision bf16 is far from fp32"
import csv, sys
def rows(p):
    r = list(csv.reader(open(p)))[3:]
    return [[float(v) for v in row[1:] if v not in ("", "train", "validation", "test")] for row in r]
a, b = rows(sys.argv[1]), rows(sys.argv[2])
diffs = [abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb)]
print(f"predict bf16 vs fp32: mean |diff| {sum(diffs) / len(diffs):.3g}, max {max(diffs):.3g} over {len(diffs)} values")
assert len(a) == len(b) and a != b and sum(diffs) / len(diffs) < 0.5, "bf16 predictions"
PY
expect_fail 2 "^error: predict: unknown --precision 'fp64'" "$TRAINER" predict --checkpoint "$SCRATCH/fp32/checkpoints/last.h5" \
  --precision fp64 --out "$SCRATCH/bad.csv"
echo "train_mixed_precision: ok"
