# Pretrained backbones from the files users have, written here by Debian's
# python3-torch with random values in the real formats: torchvision's state dict
# (torch.save, zip + pickle), an mmpose-style checkpoint ({meta, state_dict} with
# backbone.* and head tensors, as lightning-pose's resnet50_animal_ap10k file), and
# .safetensors (float32 and float16). `train --save-initial --max-steps 0` writes the
# weights as loaded; every backbone tensor must equal the file's, bit for bit (float16
# exactly converted). With equal weights, the forward pass equals PyTorch's
# (tests/integration/parity_model.sh). Bad files give `error:` and exit 2.
source "$(dirname "$0")/lib/common.sh"
PY=/usr/bin/python3
$PY -c "import torch, torchvision, h5py, numpy" 2>/dev/null || skip "torch, torchvision, h5py or numpy missing for $PY"
"$TRAINER" synth --out "$SCRATCH/small.h5" --frames 16 --size 64 --keypoints 3 --seed 1 >/dev/null || fail "synth"
$PY - "$SCRATCH" <<'PY' || fail "writing the weight files"
import json, struct, sys, collections
import numpy as np, torch, torchvision
out = sys.argv[1]
torch.manual_seed(0)
sd = torchvision.models.resnet18().state_dict()          # random values, torchvision's names
for k, v in sd.items():
    if v.dtype == torch.float32: v.copy_(torch.randn_like(v) * 0.1)
    else: v.fill_(7)                                     # num_batches_tracked
torch.save(sd, f"{out}/resnet18.pth")
mm = collections.OrderedDict(("backbone." + k, v) for k, v in sd.items() if not k.startswith("fc."))
mm["keypoint_head.final_layer.weight"] = torch.randn(17, 512, 1, 1)
torch.save({"meta": {"epoch": 210, "mmpose_version": "0.x"}, "state_dict": mm}, f"{out}/mmpose.pth")
def safetensors(path, tensors):
    header, blobs, at = {"__metadata__": {"format": "pt"}}, [], 0
    for name, (dtype, arr) in tensors.items():
        b = arr.tobytes(); header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [at, at + len(b)]}
        blobs.append(b); at += len(b)
    h = json.dumps(header).encode()
    with open(path, "wb") as f: f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
safetensors(f"{out}/f32.safetensors", {k: ("F32", v.numpy()) for k, v in sd.items() if v.dtype == torch.float32})
safetensors(f"{out}/f16.safetensors", {k: ("F16", v.numpy().astype(np.float16)) for k, v in sd.items() if v.dtype == torch.float32})
torch.save(torchvision.models.resnet34().state_dict(), f"{out}/resnet34.pth")
safetensors(f"{out}/badshape.safetensors", {"conv1.weight": ("F32", np.zeros((64, 3, 3, 3), np.float32))})
safetensors(f"{out}/int8.safetensors", {"conv1.weight": ("I8", np.zeros((64, 3, 7, 7), np.int8))})
open(f"{out}/notweights.txt", "w").write("hello")
PY
cat >"$SCRATCH/small.cfg" <<CFG
[data]
data_files = $SCRATCH/small.h5
image_resize_height = 64
image_resize_width = 64
[training]
train_batch_size = 4
num_workers = 1
[model]
backbone = resnet18
CFG
check() {  # check NAME FILE [f16]
  "$TRAINER" train --config "$SCRATCH/small.cfg" --model.backbone_weights "$SCRATCH/$2" --max-steps 0 --save-initial \
    --out "$SCRATCH/$1" >"$SCRATCH/$1.log" 2>&1 || { cat "$SCRATCH/$1.log"; fail "$1: train"; }
  grep -q "backbone: loaded .* tensors from $SCRATCH/$2" "$SCRATCH/$1.log" || { cat "$SCRATCH/$1.log"; fail "$1: no load message"; }
  $PY - "$SCRATCH/$1/checkpoints/initial.h5" "$SCRATCH/resnet18.pth" "${3:-}" <<'PY' || fail "$1: loaded weights differ"
import sys, h5py, numpy as np, torch
ckpt, ref, half = sys.argv[1], torch.load(sys.argv[2]), sys.argv[3] == "f16"
floats_only = sys.argv[3] in ("f16", "f32")  # the .safetensors files hold the float tensors only
with h5py.File(ckpt, "r") as f:
    n = 0
    for k, v in ref.items():
        if k.startswith("fc.") or (floats_only and v.dtype != torch.float32): continue
        ours = f["model/backbone." + k][()]
        want = v.numpy()
        if half and v.dtype == torch.float32: want = want.astype(np.float16).astype(np.float32)
        assert np.array_equal(np.asarray(ours), want), k
        n += 1
print(f"{n} backbone tensors equal the file's")
PY
}
check torchvision resnet18.pth
check mmpose mmpose.pth
check safetensors f32.safetensors f32
check safetensors16 f16.safetensors f16
grep -q "2 tensors of other layers ignored\|tensors of other layers ignored" "$SCRATCH/torchvision.log" || fail "fc.* not reported as ignored"
# Without weights, a backbone that stays frozen while random is warned about.
"$TRAINER" train --config "$SCRATCH/small.cfg" --training.unfreezing_epoch 2 --max-steps 1 --out "$SCRATCH/random" \
  >"$SCRATCH/random.log" 2>&1 || fail "random backbone run"
grep -q "warning: the backbone has random weights and stays frozen until epoch 2" "$SCRATCH/random.log" ||
  { cat "$SCRATCH/random.log"; fail "no warning for a frozen random backbone"; }
# Wrong files: one error line naming the problem, exit 2.
run_bad() { expect_fail 2 "$1" "$TRAINER" train --config "$SCRATCH/small.cfg" --model.backbone_weights "$2" --max-steps 0 --out "$SCRATCH/bad"; }
run_bad "has backbone tensor .* but this backbone has no such tensor" "$SCRATCH/resnet34.pth"
run_bad "is not a weights file the trainer reads" "$SCRATCH/notweights.txt"
cp "$SCRATCH/notweights.txt" "$SCRATCH/named.safetensors"
run_bad "is too short for a .safetensors file|is not a .safetensors file" "$SCRATCH/named.safetensors"
run_bad "tensor 'conv1.weight' has shape \\[64, 3, 3, 3\\] but the backbone's backbone.conv1.weight is \\[64, 3, 7, 7\\]" "$SCRATCH/badshape.safetensors"
run_bad "has dtype I8, which the trainer cannot load" "$SCRATCH/int8.safetensors"
run_bad "cannot open backbone weights" "$SCRATCH/missing.pth"
head -c 3000 "$SCRATCH/resnet18.pth" >"$SCRATCH/truncated.pth"
run_bad "cannot read .* as a zip archive|truncated or corrupt" "$SCRATCH/truncated.pth"
# EfficientNet-B0: torchvision's .pth (features.*; classifier.* ignored) loads bit for
# bit; the run's lightning-pose .ckpt names its tensors backbone.0.* as lightning-pose
# does, and reads back as the same weights.
$PY - "$SCRATCH" <<'PY' || fail "writing efficientnet_b0.pth"
import sys, torch, torchvision
torch.manual_seed(1)
sd = torchvision.models.efficientnet_b0().state_dict()
for k, v in sd.items():
    if v.dtype == torch.float32: v.copy_(torch.randn_like(v) * 0.1 + (1.0 if k.endswith("running_var") else 0.0))
torch.save(sd, f"{sys.argv[1]}/efficientnet_b0.pth")
PY
"$TRAINER" train --config "$SCRATCH/small.cfg" --model.backbone efficientnet_b0 --training.unfreezing_epoch 0 \
  --model.backbone_weights "$SCRATCH/efficientnet_b0.pth" --max-steps 2 --save-initial --out "$SCRATCH/eff" \
  >"$SCRATCH/eff.log" 2>&1 || { cat "$SCRATCH/eff.log"; fail "efficientnet_b0: train"; }
grep -q "backbone: loaded 358 tensors from .*efficientnet_b0.pth (PyTorch (torch.save)" "$SCRATCH/eff.log" ||
  { cat "$SCRATCH/eff.log"; fail "efficientnet_b0: not every features.* tensor (parameters, statistics, counters) loaded"; }
grep -q "2 tensors of other layers ignored" "$SCRATCH/eff.log" || { cat "$SCRATCH/eff.log"; fail "classifier.* not ignored"; }
ckpt=$(ls "$SCRATCH"/eff/tb_logs/*/version_0/checkpoints/*.ckpt | head -1)
[[ -f $ckpt ]] || fail "efficientnet_b0: no lightning-pose checkpoint"
$PY - "$SCRATCH/eff/checkpoints/initial.h5" "$SCRATCH/efficientnet_b0.pth" "$ckpt" "$SCRATCH/eff/checkpoints/last.h5" <<'PY' || fail "efficientnet_b0: weights or lightning-pose names differ"
import sys, h5py, numpy as np, torch
initial, pth, ckpt, last = sys.argv[1:]
ref = torch.load(pth)
with h5py.File(initial, "r") as f:
    for k, v in ref.items():
        if k.startswith("classifier."): continue
        assert np.array_equal(np.asarray(f["model/backbone." + k][()]), v.numpy()), k
state = torch.load(ckpt, map_location="cpu")["state_dict"]
with h5py.File(last, "r") as f:
    for k, v in ref.items():
        if k.startswith("classifier."): continue
        lp = "backbone.0." + k[len("features."):]
        assert lp in state, lp
        assert np.array_equal(state[lp].numpy(), np.asarray(f["model/backbone." + k][()])), lp
print("efficientnet_b0: the .pth loaded bit for bit; the .ckpt holds backbone.0.* as lightning-pose")
PY
# The lightning-pose checkpoint read back (backbone.0.* -> backbone.features.*).
"$TRAINER" train --config "$SCRATCH/small.cfg" --model.backbone efficientnet_b0 --model.backbone_weights "$ckpt" \
  --max-steps 0 --out "$SCRATCH/eff-lp" >"$SCRATCH/eff-lp.log" 2>&1 || { cat "$SCRATCH/eff-lp.log"; fail "efficientnet_b0 from its .ckpt"; }
grep -q "backbone: loaded 358 tensors from .*\.ckpt" "$SCRATCH/eff-lp.log" || { cat "$SCRATCH/eff-lp.log"; fail "efficientnet_b0: .ckpt not read"; }
echo "PASSED"
