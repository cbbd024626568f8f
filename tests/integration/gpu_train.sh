# The GPU path trains like the CPU path: the same one-epoch fp32 run (synthetic data,
# ResNet-18, same seeds, no augmentation) on --accelerator cpu and on one GPU with
# --backend nccl gives the same per-epoch training loss within 1e-3 relative.
# Then `trainer predict` with the CPU run's checkpoint on both devices gives the same CSV.
# Skipped without a CUDA build or without a visible GPU.
source "$(dirname "$0")/lib/common.sh"
"$TRAINER" --version 2>/dev/null | grep -q 'cuda (CUDA' || skip "trainer was built without the GPU path"
command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 || skip "no GPU visible (nvidia-smi -L)"

common=(--model.backbone resnet18 --data.image_resize_height 128 --data.image_resize_width 128
        --training.imgaug default --training.train_batch_size 8 --training.max_epochs 1
        --training.check_val_every_n_epoch 1 --training.num_workers 1
        --data.synthetic_file "$SCRATCH/synthetic.h5")
"$TRAINER" train "${common[@]}" --accelerator cpu --out "$SCRATCH/cpu" > "$SCRATCH/cpu.log" 2>&1 ||
  { cat "$SCRATCH/cpu.log"; fail "CPU run failed"; }
$MPIRUN -np 1 "$TRAINER" train "${common[@]}" --accelerator gpu --devices 1 --backend nccl \
  --out "$SCRATCH/gpu" > "$SCRATCH/gpu.log" 2>&1 || { cat "$SCRATCH/gpu.log"; fail "GPU run failed"; }

/usr/bin/env python3 - "$SCRATCH/cpu/metrics.csv" "$SCRATCH/gpu/metrics.csv" <<'PY' || fail "loss curves differ"
import csv, sys
cpu, gpu = ([row for row in csv.DictReader(open(p))] for p in sys.argv[1:3])
assert len(cpu) == len(gpu) and cpu, f"epochs: cpu {len(cpu)}, gpu {len(gpu)}"
for a, b in zip(cpu, gpu):
    for key in ("train_loss", "val_loss", "train_loss_step"):
        if not a[key]:
            continue
        x, y = float(a[key]), float(b[key])
        rel = abs(x - y) / max(abs(x), 1e-12)
        print(f"epoch {a['epoch']} {key}: cpu {x:.6g} gpu {y:.6g} rel {rel:.2e}")
        assert rel < 1e-3, f"{key} differs at epoch {a['epoch']}"
PY

# Prediction on the GPU gives the CPU's keypoints (fp32, same checkpoint).
for device in cpu gpu; do
  "$TRAINER" predict --checkpoint "$SCRATCH/cpu/checkpoints/last.h5" --accelerator $device \
    --out "$SCRATCH/predictions_$device.csv" > "$SCRATCH/predict_$device.log" 2>&1 ||
    { cat "$SCRATCH/predict_$device.log"; fail "predict on $device failed"; }
done
grep -q "predicting on GPU 0" "$SCRATCH/predict_gpu.log" || fail "predict --accelerator gpu did not use the GPU"
/usr/bin/env python3 - "$SCRATCH/predictions_cpu.csv" "$SCRATCH/predictions_gpu.csv" <<'PY' || fail "GPU predictions differ"
import csv, sys
cpu, gpu = ([row for row in csv.reader(open(p))][3:] for p in sys.argv[1:3])
assert len(cpu) == len(gpu) and cpu, f"rows: cpu {len(cpu)}, gpu {len(gpu)}"
worst = 0.0
for a, b in zip(cpu, gpu):
    assert a[0] == b[0] and a[-1] == b[-1], f"frame/set columns differ: {a[0]} vs {b[0]}"
    for x, y in zip(a[1:-1], b[1:-1]):
        worst = max(worst, abs(float(x) - float(y)))
print(f"predictions: largest |cpu - gpu| over x, y, likelihood: {worst:.2e}")
assert worst < 0.05, worst
PY
echo "gpu_train: GPU training and prediction match the CPU"
